import type { Logger } from './log.js';

/**
 * Runs a background pass now and then again `intervalMs` after each one ends, so passes never
 * overlap however long one takes; a failed pass is logged and the next one runs as planned. The
 * timer does not keep the process alive, and `stop` waits for the pass under way.
 */
export class RepeatingPass {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private started = false;
  /** wake() came while a pass ran: the next one follows it at once. */
  private woken = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly options: { intervalMs: number; log: Pick<Logger, 'warn'>; name: string },
  ) {}

  start(): void {
    this.stopped = false;
    this.started = true;
    this.schedule(0);
  }

  /**
   * Runs the next pass now instead of at its time (new work is known to be waiting); during a
   * pass, the next one follows it at once. Nothing before start() or after stop().
   */
  wake(): void {
    if (!this.started || this.stopped) return;
    if (this.running) {
      this.woken = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  /** Whether stop() was called: a pass that loops checks it to end early. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Resolves once no pass runs (the one under way, if any, ended). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.started = false;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .catch((error: unknown) => this.options.log.warn({ err: error }, `${this.options.name} failed`))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.woken ? 0 : this.options.intervalMs);
          this.woken = false;
        });
    }, delayMs);
    this.timer.unref();
  }
}
