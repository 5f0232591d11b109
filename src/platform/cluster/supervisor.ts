import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { type KeyRingSettings, loadKeyRing } from '../auth/keys.js';
import { concretePorts } from '../free-ports.js';
import { IdleCollection } from '../idle-collection.js';
import type { Logger } from '../log.js';
import type { PlatformConfig } from '../platform-config.js';
import { serveHostMetrics } from './host-metrics.js';
import { RestartBackoff } from './restart-backoff.js';
import { isWorkerMessage, livenessIntervalMs, WORKER_SLOT_VARIABLE } from './worker-messages.js';

/** How many workers WORKERS asks for on this host (`auto`: one per core the process may use). */
export function workerCount(config: Pick<PlatformConfig, 'WORKERS'>, cpuMax = readCpuMax()): number {
  if (config.WORKERS !== 'auto') return config.WORKERS;
  return Math.max(1, Math.min(availableParallelism(), coresOfCpuMax(cpuMax)));
}

/**
 * The cores a cgroup v2 CPU quota grants (`cpu.max`: "<quota> <period>" in microseconds, or
 * "max <period>" for none), rounded up; Infinity without a quota. A container limited to 2 CPUs on
 * a 32-core node sees 32 cores through the affinity mask Node reads, and 32 workers would share
 * 2 CPUs' time.
 */
export function coresOfCpuMax(cpuMax: string | undefined): number {
  const [quota = Number.NaN, period = Number.NaN] = (cpuMax ?? '').trim().split(/\s+/).map(Number);
  if (!(quota > 0 && period > 0 && Number.isFinite(quota) && Number.isFinite(period))) return Infinity;
  return Math.ceil(quota / period);
}

function readCpuMax(): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    return undefined; // not Linux, cgroup v1, or no such file: no quota to respect
  }
}

/** Where the workers listen. */
type ListenerSettings = Pick<PlatformConfig, 'HOST' | 'HTTP_PORT' | 'WS_PORT'>;

/** The exit status of a process stopped by its configuration (sysexits.h), as src/main.ts exits. */
const EX_CONFIG = 78;

interface Slot {
  number: number;
  worker?: Worker;
  ready: boolean;
  /** Whether a worker of this slot ever became ready: until then an exit is a failed start. */
  servedOnce: boolean;
  startedAt: number;
  /** When the worker last said it was alive (its readiness counts), for the stall check. */
  aliveAt: number;
  backoff: RestartBackoff;
  restart?: NodeJS.Timeout;
}

/**
 * Worker mode's primary process: it builds no app, it forks `count` workers that each build one
 * and share HTTP_PORT (node:cluster hands the accepted connections round) and WS_PORT (each
 * worker's uWebSockets.js listens with SO_REUSEPORT and the kernel spreads the connections).
 * A worker that exits unexpectedly is restarted after a backoff; SIGTERM or SIGINT drains every
 * worker. A ready worker whose event loop stalls past WORKER_STALL_TIMEOUT_SECONDS is killed, and so
 * restarted. Resolves with the exit code once every worker has exited after a shutdown: 0 when each
 * exited cleanly, 1 when any did not, 78 when a worker refused its configuration as it started.
 */
export async function superviseWorkers(
  config: KeyRingSettings & ListenerSettings & Pick<PlatformConfig, 'WORKER_STALL_TIMEOUT_SECONDS'>,
  count: number,
  log: Logger,
): Promise<number> {
  // Every worker must sign with the same key: the first start creates it here, before any worker
  // could race another to create one of its own under DATA_DIR/keys.
  await loadKeyRing(config, (created) =>
    log.info({ kid: created.kid, path: created.privateKeyPath }, 'generated a development signing key'),
  );
  // Port 0 picks a free port, but every worker must listen on the same one: the supervisor picks it.
  const [httpPort, wsPort] = await concretePorts(config.HOST, [config.HTTP_PORT, config.WS_PORT]);
  const ports = { httpPort, wsPort };
  serveHostMetrics();
  log.info({ workers: count, ...ports }, 'starting workers');

  const slots: Slot[] = Array.from({ length: count }, (_, i) => ({
    number: i + 1,
    ready: false,
    servedOnce: false,
    startedAt: 0,
    aliveAt: 0,
    backoff: new RestartBackoff(),
  }));
  let stopping = false;
  let failed = false;
  let refusedConfig = false;
  let finish: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => {
    finish = resolve;
  });
  const finishWhenAllExited = () => {
    if (slots.every((slot) => !slot.worker)) finish(refusedConfig ? EX_CONFIG : failed ? 1 : 0);
  };

  const start = (slot: Slot) => {
    slot.restart = undefined;
    slot.ready = false;
    slot.startedAt = Date.now();
    const worker = cluster.fork({
      HTTP_PORT: String(ports.httpPort),
      WS_PORT: String(ports.wsPort),
      [WORKER_SLOT_VARIABLE]: String(slot.number),
    });
    slot.worker = worker;
    log.info({ worker: slot.number, pid: worker.process.pid }, 'worker started');
    worker.on('message', (message: unknown) => {
      if (!isWorkerMessage(message)) return;
      if (message.type === 'atrium:ready') slot.ready = slot.servedOnce = true;
      if (message.type === 'atrium:ready' || message.type === 'atrium:alive')
        slot.aliveAt = performance.now();
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      const exit = { worker: slot.number, pid: worker.process.pid, code, signal };
      if (stopping) {
        if (code !== 0) failed = true;
        log[code === 0 ? 'info' : 'error'](exit, 'worker stopped');
        return finishWhenAllExited();
      }
      if (code === EX_CONFIG && !slot.servedOnce) {
        // A start refused for its configuration (a bad setting, an extension that cannot load)
        // fails the same way again: the service stops, as a single process does. A start that
        // failed on a dependency (no database yet) is retried below.
        log.error(exit, 'a worker refused its configuration; stopping the service');
        refusedConfig = true;
        return stop('SIGTERM');
      }
      const delayMs = slot.backoff.next(Date.now() - slot.startedAt);
      log.error({ ...exit, restartInMs: delayMs }, 'worker exited unexpectedly; restarting it');
      slot.restart = setTimeout(() => start(slot), delayMs);
    });
  };

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal means the operator does not want to wait for the drain.
      log.warn({ signal }, 'second signal: killing the workers');
      for (const slot of slots) slot.worker?.process.kill('SIGKILL');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down the workers');
    for (const slot of slots) {
      clearTimeout(slot.restart);
      const worker = slot.worker;
      if (!worker) continue;
      // A ready worker listens for the message; one still starting may not yet, and a signal
      // (its handler, or the default action) is never lost. SIGINT is not sent: a terminal's
      // Ctrl-C already reached every worker with it, and workers leave that one to the primary.
      if (slot.ready && worker.isConnected()) worker.send({ type: 'atrium:shutdown' }, undefined, () => {});
      else worker.process.kill('SIGTERM');
    }
    finishWhenAllExited();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  for (const slot of slots) start(slot);
  const stopWatching = replaceStalledWorkers(slots, config.WORKER_STALL_TIMEOUT_SECONDS, log);
  // The primary rests almost all the time: it gives memory back as a quiet worker does.
  const idle = new IdleCollection();
  idle.start();
  const code = await finished;
  stopWatching();
  await idle.stop();
  log.info(
    { code },
    code === 0 ? 'shutdown complete' : 'shutdown complete with failures (each one logged above)',
  );
  return code;
}

/**
 * Kills (SIGKILL: a blocked loop runs no handler) each ready worker silent for over `timeoutSeconds`;
 * its exit takes the path of any unexpected exit, a restart after the backoff. A worker still
 * starting is left alone: it may take long to connect and migrate, and says nothing until ready.
 * During a shutdown the check goes on, so a stalled worker cannot hold up the supervisor's exit.
 */
function replaceStalledWorkers(slots: readonly Slot[], timeoutSeconds: number, log: Logger): () => void {
  if (timeoutSeconds === 0) return () => {};
  const timer = setInterval(() => {
    // The monotonic clock: a step of the wall clock must not look like silence.
    const now = performance.now();
    for (const slot of slots) {
      if (!slot.worker || !slot.ready || now - slot.aliveAt <= timeoutSeconds * 1000) continue;
      const silentSeconds = Math.round((now - slot.aliveAt) / 100) / 10;
      log.error(
        { worker: slot.number, pid: slot.worker.process.pid, silentSeconds },
        'replacing a stalled worker: its event loop has been blocked past WORKER_STALL_TIMEOUT_SECONDS',
      );
      // So that the next look, before its exit is seen, does not kill it again.
      slot.ready = false;
      slot.worker.process.kill('SIGKILL');
    }
  }, livenessIntervalMs(timeoutSeconds)).unref();
  return () => clearInterval(timer);
}
