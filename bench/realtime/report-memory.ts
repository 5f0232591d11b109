import { cores, kib, mib, verdict, whole } from './format.js';
import {
  AFTER_GC_MIN_MS,
  type IdleResult,
  type IdleRun,
  LONG_IDLE_MS,
  perConnection,
} from './idle-memory.js';
import { CLUSTER_BACKENDS, SINGLE_BACKENDS } from './phases.js';
import {
  RSS_SAMPLE_INTERVAL_MS,
  RSS_SAMPLES,
  SETTLE_MS,
  STEADY_MAX_MS,
  STEADY_TOLERANCE_KIB,
  STEADY_TOLERANCE_RATIO,
  STEADY_WINDOW_MS,
} from './rss-readings.js';
import { CONNECT_CONCURRENCY, PER_HOLDER } from './socket-holders.js';

/** The report's idle-socket memory section. */

const TARGET_KIB_PER_CONNECTION = 4;

export interface MemoryRuns {
  single?: IdleRun;
  bare?: IdleRun;
  cluster?: IdleRun;
}

function idleRows(run: IdleRun, backend: string): string {
  return run.servers
    .map((r) => {
      const cell = (after: number) => `${mib(after)} (${kib(perConnection(r, after))})`;
      const sockets = `${whole(r.held)}${r.gauge === undefined ? '' : ` (gauge ${whole(r.gauge)})`}`;
      return `| ${r.name} | ${backend} | ${sockets} | ${mib(r.baselineKiB)} | **${cell(r.loadedKiB)}** | ${cell(r.loadedLaterKiB)} | ${cell(r.loadedAfterGcKiB)} | ${cores(r.idleCores)} |`;
    })
    .join('\n');
}

/** Splits the after-GC growth: live V8 objects, V8 heap committed but free, and memory outside the V8 heap. */
function breakdownRows(run: IdleRun): string {
  return run.servers
    .map((r) => {
      const rss = perConnection(r, r.loadedAfterGcKiB);
      const live = perConnection(r, r.heapLoadedKiB, r.heapBaselineKiB);
      const committed = perConnection(r, r.heapTotalAfterGcKiB, r.heapTotalBaselineKiB);
      const burst = `${mib(r.heapTotalBaselineKiB)} -> ${mib(r.heapTotalLoadedKiB)} (${mib(r.loadedKiB - r.baselineKiB)} MiB of RSS)`;
      return `| ${r.name} | ${kib(rss)} | ${kib(live)} | ${kib(committed - live)} | ${kib(rss - committed)} | ${burst} |`;
    })
    .join('\n');
}

function idleNotes(label: string, run: IdleRun): string {
  const dropped = Object.entries(run.dropped);
  const early =
    dropped.length === 0 ? 'none' : dropped.map(([code, count]) => `${count} (code ${code})`).join(', ');
  const reasons = Object.entries(run.failures).map(([reason, count]) => `${count} x ${reason}`);
  const why = reasons.length === 0 ? '' : ` (${reasons.join(', ')})`;
  const unsteady =
    run.unsteady.length === 0
      ? ''
      : ` RSS was still moving when the wait ended for: ${run.unsteady.join(', ')}.`;
  return `- ${label}: opened and authenticated in ${run.openSeconds.toFixed(1)} s; ${run.failed} failed${why}, ${run.retries} connect attempts retried, ${early} closed by the server while held.${unsteady}`;
}

function idleTarget(label: string, results: IdleResult[]): string {
  const at = (pick: (r: IdleResult) => number) =>
    results.map((r) => kib(perConnection(r, pick(r)))).join(' and ');
  const worst = (pick: (r: IdleResult) => number) =>
    Math.max(...results.map((r) => perConnection(r, pick(r))));
  const total = results.reduce((sum, r) => sum + r.held, 0);
  return (
    `- ${label}, ${whole(total)} sockets: ${at((r) => r.loadedKiB)} KiB/connection ${SETTLE_MS / 1000} s after the last ack; target <= ${TARGET_KIB_PER_CONNECTION} KiB: ${verdict(worst((r) => r.loadedKiB) <= TARGET_KIB_PER_CONNECTION)}. ` +
    `Left alone until RSS was steady: ${at((r) => r.loadedLaterKiB)} KiB (${verdict(worst((r) => r.loadedLaterKiB) <= TARGET_KIB_PER_CONNECTION)} there); after a forced GC: ${at((r) => r.loadedAfterGcKiB)} KiB.`
  );
}

function bareReference(run: IdleRun): string {
  const r = run.servers[0] as IdleResult;
  return `- bare uWS, same sockets and client (reference): ${kib(perConnection(r, r.loadedKiB))} KiB/connection ${SETTLE_MS / 1000} s after the last ack, ${kib(perConnection(r, r.loadedLaterKiB))} left alone, ${kib(perConnection(r, r.loadedAfterGcKiB))} after a forced GC.`;
}

export function memorySection({ single, bare, cluster }: MemoryRuns): string {
  const notRun = (what: string) => `| ${what} | (not run) | | | | | | |`;
  const lines = (...parts: (string | false | undefined)[]) => parts.filter(Boolean).join('\n');
  return `## Idle authenticated sockets

Each socket connects to /ws, sends \`{t: 'auth', id: 1, d: {token}}\` (msgpack), waits for its ack and
then stays idle (the ws client answers the server's automatic pings). The sockets come from client
processes (bench/socket-holder.ts) of at most ${whole(PER_HOLDER)} sockets each, ${CONNECT_CONCURRENCY} connecting at once in total.
The bare server (bench/bare-uws.ts: uWebSockets.js with the gateway's transport settings) answers
every frame, the auth frame included, with \`{t: 'ack', id}\` and keeps no state of its own. Nothing
else of the benchmark runs while a phase takes these readings: the bare peers of the throughput
rounds start only after them.

RSS is VmRSS of the server's node process (checked to be the node process itself), read four
times. Idle: after serving one authenticated connection and heartbeat and a forced full GC, once
steady. With all sockets held: ${SETTLE_MS / 1000} s after the last ack, the median of ${RSS_SAMPLES} readings ${RSS_SAMPLE_INTERVAL_MS} ms apart
(**the figure the target is about**); "left alone", once steady and at least ${LONG_IDLE_MS / 1000} s after the last ack,
nothing forced; and after a forced full GC, once steady. Steady means ${STEADY_WINDOW_MS / 1000} s of once-a-second readings within
${STEADY_TOLERANCE_KIB / 1024} MiB or ${STEADY_TOLERANCE_RATIO * 100}% of the RSS (the figure is their median), at least ${AFTER_GC_MIN_MS / 1000} s after a forced GC; waits are
capped at ${STEADY_MAX_MS / 1000} s. V8 hands pooled heap pages back to the OS only when its memory reducer finds the
process idle, seconds to tens of seconds later and in steps of tens of MiB, so an earlier reading
would mostly measure that timing. Any reading can still be caught before such a step (one step of
40 MiB is 2.3 KiB/connection at 18,000 sockets), the idle one most of all: over repeated runs of the
same code the idle RSS of one instance varied by about 35 MiB while its loaded readings agreed
within a few MiB. KiB/connection = (RSS with sockets - idle RSS) / sockets held. "Server CPU while
held" is the cores the server process used during the "left alone" wait: idle sockets are not free
when the server refreshes every connected user's presence and writes their last-seen times on
timers, and that work's garbage also keeps the RSS of a loaded instance moving.

| server | backends | sockets held | idle RSS MiB | RSS MiB (KiB/conn) ${SETTLE_MS / 1000} s after the last ack | left alone | after forced GC | server CPU while held |
|---|---|---|---|---|---|---|---|
${lines(
  single ? idleRows(single, SINGLE_BACKENDS) : notRun('atrium'),
  cluster ? idleRows(cluster, CLUSTER_BACKENDS) : notRun('atrium x 2'),
  bare ? idleRows(bare, 'none') : notRun('bare uWS'),
)}

${lines(
  single && idleNotes('1 instance', single),
  cluster && idleNotes('2 instances', cluster),
  bare && idleNotes('bare uWS', bare),
)}

Where the memory is, per socket, with the sockets held after the forced GC (V8 figures from the
inspector's Runtime.getHeapUsage): live V8 objects; V8 heap committed beyond them; and the rest of
the RSS growth, outside the V8 heap's committed size (uWS's per-socket state, malloc arenas,
PGlite's WASM memory, and heap pages V8 has freed but not yet returned to the OS).
The last column is the V8 heap's committed size idle and ${SETTLE_MS / 1000} s after the last ack, beside the RSS
growth at that moment: the burst of opening the sockets leaves the heap grown, and V8 only gives
that back once it has been idle for a while.

| server | RSS KiB/conn | V8 live KiB/conn | V8 committed, free KiB/conn | outside V8 KiB/conn | V8 heap committed MiB ${SETTLE_MS / 1000} s after the last ack |
|---|---|---|---|---|---|
${lines(single && breakdownRows(single), cluster && breakdownRows(cluster), bare && breakdownRows(bare))}

${lines(
  single && idleTarget('1 instance', single.servers),
  cluster && idleTarget('2 instances', cluster.servers),
  bare && bareReference(bare),
)}
`;
}
