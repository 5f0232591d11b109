import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** How often the node looks at its loop and heap. */
export const IDLE_CHECK_INTERVAL_MS = 60_000;
/** Event loop utilization over the last interval under which the node counts as quiet (2%). */
export const QUIET_UTILIZATION = 0.02;
/** Heap growth since the last collection that makes another one worth its pause. */
export const HEAP_GROWTH_BYTES = 1024 * 1024;

export interface IdleCollectionOptions {
  /** The loop's utilization since the previous call (0 to 1). */
  utilization?: () => number;
  /** The V8 heap's bytes in use now. */
  heapUsed?: () => number;
  /** Runs a memory-reducing collection; settles when it is over. */
  collect?: () => Promise<void>;
}

/**
 * Gives memory back while the node is quiet. A resting process still allocates a little (the
 * background jobs' statements and KV commands); what survives two young-generation collections is
 * promoted and stays until a major collection, which V8 runs only when the old generation reaches
 * its limit, several MiB above what is live. V8 runs one memory-reducing collection when a process
 * goes quiet, and not again while the quiet lasts, so a resting node grows by about 7 MiB within
 * ten minutes and stays there (docs/performance.md, "Process memory and start time"). Go's
 * runtime, for comparison, collects at least every 2 minutes and returns freed memory to the OS.
 * Here, once a minute, a node whose loop was busy under 2% of the minute and whose heap grew by
 * 1 MiB since its last collection runs V8's quiet-process collection again (memory-reducing and
 * full, through the inspector's HeapProfiler.collectGarbage, which needs no runtime flag). A busy
 * node never pauses for it.
 */
export class IdleCollection {
  private readonly utilization: () => number;
  private readonly heapUsed: () => number;
  private readonly collect: () => Promise<void>;
  /** Heap in use after the last collection; none yet: the first quiet minute collects. */
  private heapAfterLast = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(options: IdleCollectionOptions = {}) {
    this.utilization = options.utilization ?? loopUtilization();
    this.heapUsed = options.heapUsed ?? (() => getHeapStatistics().used_heap_size);
    this.collect = options.collect ?? collectThroughInspector;
  }

  start(): void {
    this.utilization();
    this.timer = setInterval(() => void this.check(), IDLE_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One look (the timer's; tests call it): collects when the node was quiet and the heap grew. */
  async check(): Promise<boolean> {
    const quiet = this.utilization() < QUIET_UTILIZATION;
    if (!quiet || this.running || this.heapUsed() - this.heapAfterLast < HEAP_GROWTH_BYTES) return false;
    this.running = this.collect()
      .catch(() => undefined)
      .finally(() => {
        this.heapAfterLast = this.heapUsed();
        this.running = undefined;
      });
    await this.running;
    return true;
  }
}

/** The event loop's utilization since the previous call (perf_hooks' eventLoopUtilization). */
function loopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    return utilization;
  };
}

/**
 * V8's memory-reducing collection (the inspector's collectGarbage runs the isolate's low-memory
 * notification), from a session of this process opened for it and closed after. Closed on the
 * next turn: on Node 20 a session disconnected from within its answer's dispatch leaves the event
 * loop stuck, and the process would never exit by itself.
 */
async function collectThroughInspector(): Promise<void> {
  const { Session } = await import('node:inspector');
  const session = new Session();
  session.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      session.post('HeapProfiler.collectGarbage', (error) => (error ? reject(error) : resolve()));
    });
  } finally {
    setImmediate(() => session.disconnect());
  }
}
