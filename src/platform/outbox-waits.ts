/** The outbox's timers: its two bounded waits (on a handler, and on stop()) and its retries' wake-ups. */

/**
 * The handler's outcome, or a failure once its lease is over: another node may be running it by
 * then, and this node's slot is freed for others. What the handler does later is ignored.
 */
export async function withinLease(handle: () => Promise<void>, leaseMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const lapsed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the handler outlived its lease')), leaseMs);
    timer.unref();
  });
  try {
    await Promise.race([(async () => handle())(), lapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until one of `tasks` settles or `ms` pass. */
export async function settledWithin(tasks: readonly Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    ...tasks.map((task) => task.catch(() => undefined)),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** Timers that each call `wake` once, and none after clear(); they do not keep the process alive. */
export class WakeTimers {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly wake: () => void) {}

  after(ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.wake();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  clear(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
