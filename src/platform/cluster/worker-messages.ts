import cluster from 'node:cluster';

/**
 * What the supervisor (the primary process of worker mode) and its workers tell each other over
 * node:cluster's IPC channel, and the worker's own view of its place.
 */

/** The worker's slot, 1 to WORKERS, in its environment: a restarted worker takes its slot again. */
export const WORKER_SLOT_VARIABLE = 'ATRIUM_WORKER_SLOT';

export type WorkerMessage =
  /** Worker to supervisor: the worker listens and serves. */
  | { type: 'atrium:ready' }
  /** Worker to supervisor, every livenessIntervalMs once ready: its event loop is not stalled. */
  | { type: 'atrium:alive' }
  /** Supervisor to worker: drain and exit, as on SIGTERM. */
  | { type: 'atrium:shutdown' }
  /** Worker to supervisor: the whole host's metrics, please (a scrape reached this worker). */
  | { type: 'atrium:metrics-request'; id: number }
  | { type: 'atrium:metrics'; id: number; text: string }
  | { type: 'atrium:metrics'; id: number; error: string };

export function isWorkerMessage(message: unknown): message is WorkerMessage {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.startsWith('atrium:');
}

/** This process's slot when it is a worker of worker mode; undefined when it serves alone. */
export function workerSlot(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const slot = Number(process.env[WORKER_SLOT_VARIABLE]);
  return Number.isInteger(slot) && slot > 0 ? slot : undefined;
}

/** Sends to the supervisor; a worker whose supervisor is gone is about to exit anyway. */
export function tellSupervisor(message: WorkerMessage): void {
  if (process.connected) process.send?.(message, undefined, undefined, () => {});
}

/**
 * How often a worker says it is alive, and the supervisor looks: four times within the stall
 * timeout, and at most once a second, so a loop that is merely busy is never taken for stalled.
 */
export function livenessIntervalMs(stallTimeoutSeconds: number): number {
  return Math.min(1000, stallTimeoutSeconds * 250);
}

/**
 * Tells the supervisor, from a timer, that this worker's event loop runs: a loop blocked by a
 * synchronous call runs no timer, so the messages stop and the supervisor replaces the worker
 * (WORKER_STALL_TIMEOUT_SECONDS; 0 sends nothing). The timer does not keep the process alive.
 */
export function tellSupervisorAlive(stallTimeoutSeconds: number): void {
  if (stallTimeoutSeconds === 0) return;
  setInterval(
    () => tellSupervisor({ type: 'atrium:alive' }),
    livenessIntervalMs(stallTimeoutSeconds),
  ).unref();
}
