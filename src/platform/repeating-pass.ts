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

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly options: { intervalMs: number; log: Pick<Logger, 'warn'>; name: string },
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Whether stop() was called: a pass that loops checks it to end early. */
  get stopping(): boolean {
    return this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
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
          this.schedule(this.options.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
