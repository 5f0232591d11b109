import type { Logger } from './log.js';

/**
 * Runs a background pass now and then again `intervalMs` after each one ends, so passes never
 * overlap however long one takes; a failed pass is logged and the next one runs as planned. A
 * pass that knows when there is work next may answer the delay to it instead (a number of ms,
 * used when shorter than `intervalMs`, which stays the longest wait). The timer does not keep the
 * process alive, and `stop` waits for the pass under way.
 */
export class RepeatingPass {
  private timer: NodeJS.Timeout | undefined;
  /** performance.now() at which the scheduled pass runs. */
  private dueAt = Number.POSITIVE_INFINITY;
  /** The shortest delay wakeWithin() asked for during a pass: the next one runs no later. */
  private wokenWithin = Number.POSITIVE_INFINITY;
  private running: Promise<void> | undefined;
  private stopped = false;
  private started = false;
  /** wake() came while a pass ran: the next one follows it at once. */
  private woken = false;

  constructor(
    private readonly pass: () => Promise<unknown>,
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

  /**
   * Runs the next pass within `delayMs` (work is known to be due then), or at its time when that
   * is sooner; during a pass, the next one follows it no later than that. Nothing before start()
   * or after stop().
   */
  wakeWithin(delayMs: number): void {
    if (!this.started || this.stopped) return;
    const delay = Math.max(0, delayMs);
    if (this.running) {
      this.wokenWithin = Math.min(this.wokenWithin, delay);
      return;
    }
    if (performance.now() + delay >= this.dueAt) return;
    clearTimeout(this.timer);
    this.schedule(delay);
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
    this.dueAt = performance.now() + delayMs;
    this.timer = setTimeout(() => {
      this.dueAt = Number.POSITIVE_INFINITY;
      this.running = this.pass()
        .then(
          (next) => (typeof next === 'number' && next >= 0 ? next : this.options.intervalMs),
          (error: unknown) => {
            this.options.log.warn({ err: error }, `${this.options.name} failed`);
            return this.options.intervalMs;
          },
        )
        .then((next) => {
          this.running = undefined;
          const delay = this.woken ? 0 : Math.min(next, this.options.intervalMs, this.wokenWithin);
          this.woken = false;
          this.wokenWithin = Number.POSITIVE_INFINITY;
          this.schedule(delay);
        });
    }, delayMs);
    this.timer.unref();
  }
}
