import { AppError, DEPENDENCY_RETRY_AFTER_SECONDS, ErrorCode } from '../errors.js';

/**
 * Runs the frames every client sends as it connects (operations declared `setup`: authentication,
 * joins, subscriptions) at most `concurrency` at a time on this node, the rest in arrival order.
 * When a node dies, its clients reconnect to the others within a second or so; their setup frames,
 * several statements each, would otherwise take every pooled database connection for seconds, and
 * the steady requests of clients already set up would wait past the pool's acquire timeout. Once
 * `maxWaiting` frames wait, one more is refused at once with SERVICE_UNAVAILABLE: its client
 * retries later (AtriumClient reconnects with backoff), and the queue's memory stays bounded.
 */
export class SetupAdmission {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly maxWaiting: number,
  ) {}

  async run<T>(work: () => T | Promise<T>): Promise<T> {
    if (this.running < this.concurrency) this.running++;
    else if (this.waiting.length < this.maxWaiting)
      await new Promise<void>((start) => this.waiting.push(start));
    else {
      throw new AppError(
        ErrorCode.SERVICE_UNAVAILABLE,
        'Too many connections are being set up on this node right now; retry shortly.',
        { retryAfterSeconds: DEPENDENCY_RETRY_AFTER_SECONDS },
      );
    }
    try {
      return await work();
    } finally {
      // A finished frame hands its place to the next waiting one, or gives it back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
