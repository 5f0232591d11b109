/**
 * How long the supervisor waits before restarting a worker that exited: 1 s, doubling with each
 * exit that follows a short run, up to 30 s; a worker that ran `stableMs` starts the count over.
 * A worker that cannot start (a database refusing its password) is so retried twice a minute at
 * most instead of being forked in a loop that keeps the host's cores busy.
 */
export class RestartBackoff {
  private exits = 0;

  constructor(
    private readonly options: { initialMs: number; maxMs: number; stableMs: number } = {
      initialMs: 1000,
      maxMs: 30_000,
      stableMs: 60_000,
    },
  ) {}

  /** The delay before the next start, for a worker that ran `ranMs` before it exited. */
  next(ranMs: number): number {
    if (ranMs >= this.options.stableMs) this.exits = 0;
    const { initialMs, maxMs } = this.options;
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(this.exits, 30));
    this.exits++;
    return delay;
  }
}
