/**
 * Runs the tasks of one key one after another in this process, in the order they came; tasks of
 * different keys run side by side. Work that takes turns on a database lock takes them here first,
 * so a burst on one key waits in memory instead of holding a pooled connection per waiter while
 * Postgres queues them, where every wait would also count against the statement timeout. The
 * database lock still orders this node against the others.
 */
export class KeyedTurns {
  /** The settled end of each key's queue; a key is forgotten once its queue is empty. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}
