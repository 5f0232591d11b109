/** The longest delay setTimeout takes (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** What the queue keeps on each entry: the second its bucket stands for, while queued. */
export interface Expiring {
  expirySecond: number | undefined;
}

/**
 * Calls `onExpire` for each entry once its time has come, from one-second buckets behind a single
 * timer. A timer per socket (its Timeout, closure and list entry) cost about 200 bytes of every
 * idle connection; access tokens expire on whole seconds (`exp`), so the buckets lose nothing.
 */
export class ExpiryQueue<T extends Expiring> {
  private readonly buckets = new Map<number, Set<T>>();
  private timer: NodeJS.Timeout | undefined;
  private timerSecond = Number.POSITIVE_INFINITY;

  constructor(
    private readonly onExpire: (entry: T) => void,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Queues `entry` to expire at `atMs` (rounded up to the second), replacing an earlier time. */
  schedule(entry: T, atMs: number): void {
    this.cancel(entry);
    const second = Math.ceil(atMs / 1000);
    let bucket = this.buckets.get(second);
    if (!bucket) {
      bucket = new Set();
      this.buckets.set(second, bucket);
    }
    bucket.add(entry);
    entry.expirySecond = second;
    if (second < this.timerSecond) this.arm(second);
  }

  cancel(entry: T): void {
    if (entry.expirySecond === undefined) return;
    const bucket = this.buckets.get(entry.expirySecond);
    if (bucket?.delete(entry) && bucket.size === 0) this.buckets.delete(entry.expirySecond);
    entry.expirySecond = undefined;
  }

  /** Drops the timer; entries still queued never expire. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerSecond = Number.POSITIVE_INFINITY;
  }

  private arm(second: number): void {
    clearTimeout(this.timer);
    this.timerSecond = second;
    // Node runs a longer delay at once (after 1 ms, warning): a far bucket is reached in steps.
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, second * 1000 - this.nowMs()));
    this.timer = setTimeout(() => this.fire(), delay);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerSecond = Number.POSITIVE_INFINITY;
    const nowSecond = Math.floor(this.nowMs() / 1000);
    let next = Number.POSITIVE_INFINITY;
    for (const [second, bucket] of [...this.buckets]) {
      if (second > nowSecond) {
        next = Math.min(next, second);
        continue;
      }
      this.buckets.delete(second);
      for (const entry of bucket) {
        entry.expirySecond = undefined;
        this.onExpire(entry);
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}
