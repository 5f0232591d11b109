/**
 * The work a node has started and not finished: HTTP requests (from their first hook to their
 * answer), frame handlers and event publishes. A request or frame whose client went away keeps
 * running, unseen by the server's connections, and a publish may outlive its request (a service
 * may answer before its event left), so shutdown waits for this before it stops the modules and
 * closes Redis and the database: a write that committed still publishes its events, and nothing
 * fails on a closed pool or connection.
 */
export class InFlight {
  /** Each running piece of work, with how to name it if shutdown has to give up on it. */
  private readonly running = new Map<object, () => string>();
  private readonly idleWaiters: (() => void)[] = [];

  /** `work` is any object that stands for it (a request, a promise) until `end(work)`. */
  begin(work: object, describe: () => string): void {
    this.running.set(work, describe);
  }

  /** Ends `work`; ending it again, or what never began, does nothing. */
  end(work: object): void {
    if (!this.running.delete(work) || this.running.size > 0) return;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Counts `promise` as running until it settles; answers it unchanged. */
  track<T>(promise: Promise<T>, describe: () => string): Promise<T> {
    this.begin(promise, describe);
    const end = () => this.end(promise);
    promise.then(end, end);
    return promise;
  }

  get size(): number {
    return this.running.size;
  }

  /** How many pieces of each kind are running; descriptions name operations, never ids or payloads. */
  kinds(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const describe of this.running.values()) {
      const what = describe();
      counts[what] = (counts[what] ?? 0) + 1;
    }
    return counts;
  }

  /** Resolves once nothing is running, with undefined; or after `timeoutMs`, with what still is (`kinds`). */
  idle(timeoutMs: number): Promise<Record<string, number> | undefined> {
    if (this.running.size === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(undefined);
      };
      const timer = setTimeout(() => {
        this.idleWaiters.splice(this.idleWaiters.indexOf(wake), 1);
        resolve(this.kinds());
      }, timeoutMs);
      this.idleWaiters.push(wake);
    });
  }
}
