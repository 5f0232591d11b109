import { cores, kib, mib } from './format.js';
import { collectGarbage, heapCommittedKiB } from './inspector.js';
import { cpuSeconds } from './process-stats.js';
import { progress } from './progress.js';
import { SETTLE_MS, settledRss, steadyRss } from './rss-readings.js';
import { waitForNoConnections, wsConnectionGauge } from './servers.js';
import { holdSockets } from './socket-holders.js';
import { warmUp } from './ws-client.js';

/** RSS growth per idle authenticated socket, for one or more servers holding their sockets at once. */

/** Readings after a forced GC wait at least this long, so V8's delayed release of pooled pages is in. */
export const AFTER_GC_MIN_MS = 20_000;
/** The "left alone" reading is steady and at least this long after the last ack. */
export const LONG_IDLE_MS = 45_000;

export interface IdleServer {
  name: string;
  pid: number;
  inspectorPort: number;
  wsUrl: string;
  /** Atrium's HTTP port, for the connection gauge; bare servers have none. */
  httpPort?: number;
  tokens: string[];
  warmToken: string;
}

export interface IdleResult {
  name: string;
  held: number;
  /** What the server's own atrium_ws_connections gauge said while the sockets were held. */
  gauge?: number;
  /** RSS idle and warm, after a forced full GC, once steady. */
  baselineKiB: number;
  /** RSS SETTLE_MS after the last socket authenticated (the garbage of opening them included). */
  loadedKiB: number;
  /** RSS with the sockets held and nothing forced, steady and at least LONG_IDLE_MS after the last ack. */
  loadedLaterKiB: number;
  /** RSS with the sockets held after a forced full GC, once steady. */
  loadedAfterGcKiB: number;
  /** V8 heap in use right after the forced GCs, idle and with the sockets held. */
  heapBaselineKiB: number;
  heapLoadedKiB: number;
  /** V8 heap committed (total size): idle, SETTLE_MS after the last ack, and at the after-GC reading. */
  heapTotalBaselineKiB: number;
  heapTotalLoadedKiB: number;
  heapTotalAfterGcKiB: number;
  /** CPU cores the server used while it held the idle sockets (during the "left alone" wait). */
  idleCores: number;
}

export interface IdleRun {
  servers: IdleResult[];
  /** Readings whose wait hit the cap before RSS was steady. */
  unsteady: string[];
  failed: number;
  /** Why connections failed (after retries), by reason. */
  failures: Record<string, number>;
  retries: number;
  dropped: Record<string, number>;
  openSeconds: number;
}

export const perConnection = (r: IdleResult, after: number, before = r.baselineKiB) =>
  (after - before) / r.held;

/**
 * Warm-up, idle RSS, then every server's tokens held as idle sockets: RSS 3 s after they are all
 * authenticated (the figure the target is about), again after a long idle stretch, and once more
 * after a forced full GC; then close.
 */
export async function measureIdle(label: string, servers: IdleServer[]): Promise<IdleRun> {
  const pids = servers.map((s) => s.pid);
  const gc = () => Promise.all(servers.map((s) => collectGarbage(s.pid, s.inspectorPort)));
  const heapCommitted = () => Promise.all(servers.map((s) => heapCommittedKiB(s.pid, s.inspectorPort)));
  for (const server of servers) await warmUp(server.wsUrl, server.warmToken);
  // Startup leaves garbage (PGlite's initdb instance, migrations) that V8 and malloc only hand
  // back after tens of idle seconds; collecting it first makes the baseline the settled process.
  const unsteady: string[] = [];
  const steady = async (reading: string, minMs: number) => {
    const result = await steadyRss(pids, minMs);
    if (!result.steady) unsteady.push(reading);
    return result.kib;
  };
  const heapBaseline = await gc();
  const baseline = await steady('idle', AFTER_GC_MIN_MS);
  const heapTotalBaseline = await heapCommitted();
  progress(`${label}: idle RSS ${baseline.map((kib) => `${mib(kib)} MiB`).join(', ')}`);
  const held = await holdSockets(
    label,
    servers.map((s) => ({ url: s.wsUrl, tokens: s.tokens })),
  );
  const readyAt = performance.now();
  try {
    const loaded = await settledRss(pids);
    const heapTotalLoaded = await heapCommitted();
    const gauges = await Promise.all(
      servers.map((s) => (s.httpPort === undefined ? undefined : wsConnectionGauge(s.httpPort))),
    );
    progress(
      `${label}: RSS ${loaded.map((kib) => `${mib(kib)} MiB`).join(', ')} ${SETTLE_MS / 1000} s after the last ack; ` +
        `holding them until RSS is steady...`,
    );
    const idleCpuFrom = { at: performance.now(), seconds: await Promise.all(pids.map(cpuSeconds)) };
    const loadedLater = await steady('left alone', LONG_IDLE_MS - (performance.now() - readyAt));
    const idleCpuSeconds = (performance.now() - idleCpuFrom.at) / 1000;
    const idleCores = (await Promise.all(pids.map(cpuSeconds))).map(
      (used, index) => (used - (idleCpuFrom.seconds[index] as number)) / idleCpuSeconds,
    );
    const heapLoaded = await gc();
    const loadedAfterGc = await steady('after forced GC', AFTER_GC_MIN_MS);
    const heapTotalAfterGc = await heapCommitted();
    const results = servers.map((server, index): IdleResult => {
      const gauge = gauges[index];
      return {
        name: server.name,
        held: held.authed[index] ?? 0,
        ...(gauge === undefined ? {} : { gauge }),
        baselineKiB: baseline[index] as number,
        loadedKiB: loaded[index] as number,
        loadedLaterKiB: loadedLater[index] as number,
        loadedAfterGcKiB: loadedAfterGc[index] as number,
        heapBaselineKiB: heapBaseline[index] as number,
        heapLoadedKiB: heapLoaded[index] as number,
        heapTotalBaselineKiB: heapTotalBaseline[index] as number,
        heapTotalLoadedKiB: heapTotalLoaded[index] as number,
        heapTotalAfterGcKiB: heapTotalAfterGc[index] as number,
        idleCores: idleCores[index] as number,
      };
    });
    for (const r of results) {
      progress(
        `${label}: ${r.name}, ${r.held} sockets${r.gauge === undefined ? '' : ` (gauge ${r.gauge})`}: ` +
          `${kib(perConnection(r, r.loadedKiB))} KiB/connection after ${SETTLE_MS / 1000} s, ` +
          `${kib(perConnection(r, r.loadedLaterKiB))} left alone, ` +
          `${kib(perConnection(r, r.loadedAfterGcKiB))} after a forced GC, ${cores(r.idleCores)} cores busy while idle ` +
          `(V8 heap in use ${kib(perConnection(r, r.heapLoadedKiB, r.heapBaselineKiB))} KiB/connection)`,
      );
    }
    const { dropped } = await held.close();
    if (Object.keys(dropped).length > 0)
      progress(`${label}: sockets closed early by code: ${JSON.stringify(dropped)}`);
    for (const server of servers)
      if (server.httpPort !== undefined) await waitForNoConnections(server.httpPort);
    if (unsteady.length > 0)
      progress(`${label}: RSS was still moving at the cap for: ${unsteady.join(', ')}`);
    return {
      servers: results,
      unsteady,
      failed: held.failed,
      failures: held.failures,
      retries: held.retries,
      dropped,
      openSeconds: held.ms / 1000,
    };
  } catch (error) {
    held.kill();
    throw error;
  }
}
