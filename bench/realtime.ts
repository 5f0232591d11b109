import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { decode, encode } from '@msgpack/msgpack';
import autocannon from 'autocannon';
import pg from 'pg';
import WebSocket from 'ws';
import { configFrom } from '../src/config.js';
import { AccessTokens } from '../src/platform/auth/access-tokens.js';
import { loadKeyRing } from '../src/platform/auth/keys.js';
import { newId } from '../src/platform/ids.js';
import { MemoryKv } from '../src/platform/kv/memory-kv.js';
import { type RunningService, startService } from './service.js';
import type { ClosedReport, HolderCommand, HolderReport, ReadyReport } from './socket-holder.js';

/**
 * Realtime benchmarks: idle authenticated sockets held by one instance and by two instances
 * sharing Redis (RSS growth per connection, beside a bare uWebSockets.js server holding the same
 * sockets), presence heartbeat frames/s through the gateway beside a bare uWS msgpack echo, and
 * REST heartbeat req/s beside a bare Fastify route. Usage:
 * `npm run bench -- realtime [--seconds N] [--connections N] [--phases single,bare,cluster]`.
 * Writes bench/results/realtime.md.
 *
 * Users are synthetic: access tokens are signed in this process with the service's own key (read
 * from its DATA_DIR), for user ids that do not exist in the database, because registering tens of
 * thousands of users through argon2 would take hours. The gateway only verifies the signature and
 * claims, so they authenticate like real users.
 */

const DEFAULT_CONNECTIONS = 18_000;
/** Sockets per client process: each needs a file descriptor on the client side as well. */
const PER_HOLDER = 4_500;
/** Connections being opened or authenticated at once, over all client processes. */
const CONNECT_CONCURRENCY = 200;
const PROGRESS_STEP = 2_000;
const READY_TIMEOUT_MS = 15 * 60_000;
const SETTLE_MS = 3_000;
/**
 * RSS of an idle node process still moves for a while: V8 gives pooled heap pages (freed by GCs,
 * not counted in its heap size) back to the OS only when its memory reducer decides the process is
 * idle, seconds to tens of seconds later, in steps of tens of MiB. A reading counts as steady when
 * STEADY_WINDOW_MS of once-a-second samples stay within the tolerance; waits are capped so the
 * benchmark always ends.
 */
const STEADY_WINDOW_MS = 20_000;
const STEADY_TOLERANCE_KIB = 2_048;
/** Or within this fraction of the RSS when that is more: periodic work keeps a big process moving a little. */
const STEADY_TOLERANCE_RATIO = 0.01;
const STEADY_MAX_MS = 90_000;
/** Readings after a forced GC wait at least this long, so V8's delayed release of pooled pages is in. */
const AFTER_GC_MIN_MS = 20_000;
/** The "left alone" reading is steady and at least this long after the last ack. */
const LONG_IDLE_MS = 45_000;
const RSS_SAMPLES = 5;
const RSS_SAMPLE_INTERVAL_MS = 500;
const LOAD_CONNECTIONS = 50;
const IN_FLIGHT = 16;
const WARMUP_SECONDS = 2;
const REST_CONNECTIONS = 50;
const TARGET_KIB_PER_CONNECTION = 4;
const TARGET_WS_RATIO = 0.5;
const TARGET_REST_RATIO = 0.6;
const REDIS_URL = 'redis://127.0.0.1:6379';
const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';
/**
 * The frame limit is raised to the most the config accepts (WS_MAX_FRAMES_PER_SECOND allows at most
 * 100000), so throughput runs measure the work, not the limiter. Connections must authenticate
 * within WS_AUTH_TIMEOUT_MS of opening: generous, since 18,000 open in bounded batches.
 */
const SERVICE_ENV = {
  WS_MAX_FRAMES_PER_SECOND: '100000',
  WS_AUTH_TIMEOUT_MS: '120000',
  LOG_LEVEL: 'info',
};

const PHASES = ['single', 'bare', 'cluster'] as const;
type Phase = (typeof PHASES)[number];

interface Options {
  connections: number;
  phases: Set<Phase>;
}

const progress = (message: string) => console.log(`[bench:realtime] ${message}`);
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function optionsFromArgv(): Options {
  const { values } = parseArgs({
    options: { connections: { type: 'string' }, phases: { type: 'string' } },
    allowPositionals: true,
    strict: false,
  });
  const connections = Number(values.connections) || DEFAULT_CONNECTIONS;
  const requested =
    typeof values.phases === 'string' ? values.phases.split(',').map((p) => p.trim()) : [...PHASES];
  const unknown = requested.filter((p) => !(PHASES as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new Error(`Unknown phase(s) ${unknown.join(', ')}; use ${PHASES.join(', ')}.`);
  return { connections, phases: new Set(requested as Phase[]) };
}

// ---------------------------------------------------------------------------------------------
// Processes: memory and CPU from /proc, child servers, shutdown.

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/** CPU seconds (user + system) the process has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of /proc/<pid>/stat (utime, stime); index 0 here is field 3.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds the whole machine spent busy (all cores, everything but idle and iowait) so far. */
async function machineBusySeconds(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  return (total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / CLOCK_TICKS;
}

/** CPU use of the server, this process and the machine over a measured window, in cores. */
async function cpuWindow(serverPid: number) {
  const [server, machine] = await Promise.all([cpuSeconds(serverPid), machineBusySeconds()]);
  const client = process.cpuUsage();
  const started = performance.now();
  return async () => {
    const seconds = (performance.now() - started) / 1000;
    const [serverAfter, machineAfter] = await Promise.all([cpuSeconds(serverPid), machineBusySeconds()]);
    const clientUsed = process.cpuUsage(client);
    return {
      serverCores: (serverAfter - server) / seconds,
      clientCores: (clientUsed.user + clientUsed.system) / 1e6 / seconds,
      machineCores: (machineAfter - machine) / seconds,
    };
  };
}

/** The RSS figure must be the node process itself, not a wrapper (npm, tsx CLI, a shell). */
async function assertNodeProcess(pid: number, script: string): Promise<void> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  if (!basename(argv[0] ?? '').startsWith('node') || !argv.includes(script)) {
    throw new Error(`pid ${pid} is not the node process running ${script}: ${argv.join(' ')}`);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/**
 * Environment that lets this benchmark force a full garbage collection in a server: the inspector
 * stays off until SIGUSR1 and then listens on this loopback port only.
 */
async function inspectorEnv(): Promise<{ port: number; env: Record<string, string> }> {
  const port = await freePort();
  const options = `${process.env.NODE_OPTIONS ?? ''} --inspect-port=127.0.0.1:${port}`.trim();
  return { port, env: { NODE_OPTIONS: options } };
}

/** Sends inspector protocol commands, one after the other, to another node process; returns their results. */
async function inspect(pid: number, inspectorPort: number, methods: string[]): Promise<unknown[]> {
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let attempt = 0; attempt < 100 && !url; attempt++) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as {
        webSocketDebuggerUrl?: string;
      }[];
      url = targets[0]?.webSocketDebuggerUrl;
    } catch {
      await sleep(50);
    }
  }
  if (!url) throw new Error(`the inspector of pid ${pid} did not come up on port ${inspectorPort}`);
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((done, fail) => {
    ws.once('open', () => done());
    ws.once('error', fail);
  });
  try {
    const results: unknown[] = [];
    for (const [index, method] of methods.entries()) {
      results.push(
        await new Promise<unknown>((done) => {
          const onMessage = (data: Buffer) => {
            const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown };
            if (reply.id !== index + 1) return;
            ws.off('message', onMessage);
            done(reply.result);
          };
          ws.on('message', onMessage);
          ws.send(JSON.stringify({ id: index + 1, method }));
        }),
      );
    }
    return results;
  } finally {
    await closeSocket(ws);
  }
}

/** Forces two full garbage collections in a node process; returns its V8 heap use after them, in KiB. */
async function collectGarbage(pid: number, inspectorPort: number): Promise<number> {
  const results = await inspect(pid, inspectorPort, [
    'HeapProfiler.collectGarbage',
    'HeapProfiler.collectGarbage',
    'Runtime.getHeapUsage',
  ]);
  return ((results[2] as { usedSize: number }).usedSize ?? Number.NaN) / 1024;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Waits `settleMs`, then the median of RSS_SAMPLES readings per process, sampled side by side. */
async function settledRss(pids: number[], settleMs = SETTLE_MS): Promise<number[]> {
  await sleep(settleMs);
  const samples: number[][] = pids.map(() => []);
  for (let i = 0; i < RSS_SAMPLES; i++) {
    if (i > 0) await sleep(RSS_SAMPLE_INTERVAL_MS);
    const readings = await Promise.all(pids.map(rssKiB));
    for (const [index, kib] of readings.entries()) samples[index]?.push(kib);
  }
  return samples.map(median);
}

interface SteadyRss {
  kib: number[];
  /** False when the wait hit its cap before RSS stopped moving. */
  steady: boolean;
  waitedMs: number;
}

/** RSS once it stopped moving (see STEADY_WINDOW_MS): the median of the steady window, per process. */
async function steadyRss(pids: number[], minMs: number, maxMs = STEADY_MAX_MS): Promise<SteadyRss> {
  const started = performance.now();
  const windowSamples = STEADY_WINDOW_MS / 1000 + 1;
  const history: number[][] = [];
  for (;;) {
    history.push(await Promise.all(pids.map(rssKiB)));
    const waitedMs = performance.now() - started;
    const window = history.slice(-windowSamples);
    const column = (index: number) => window.map((sample) => sample[index] as number);
    const steady =
      window.length === windowSamples &&
      pids.every(
        (_, index) =>
          Math.max(...column(index)) - Math.min(...column(index)) <=
          Math.max(STEADY_TOLERANCE_KIB, STEADY_TOLERANCE_RATIO * median(column(index))),
      );
    if ((steady && waitedMs >= minMs) || waitedMs >= maxMs) {
      return { kib: pids.map((_, index) => median(column(index))), steady, waitedMs };
    }
    await sleep(1000);
  }
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, then SIGKILL if the process has not exited after `graceMs`. */
async function stopChild(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    progress(`pid ${child.pid} did not exit within ${graceMs / 1000} s of SIGTERM; sending SIGKILL`);
    child.kill('SIGKILL');
  }, graceMs);
  await gone;
  clearTimeout(timer);
}

async function stopService(service: RunningService): Promise<void> {
  await stopChild(service.child, 30_000);
}

interface ChildServer {
  child: ChildProcess;
  port: number;
  inspectorPort: number;
  stop(): Promise<void>;
}

/** Starts one of the bare comparison servers and waits for the `{"port": N}` line it prints. */
async function startChildServer(script: string): Promise<ChildServer> {
  const inspector = await inspectorEnv();
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...inspector.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((done, fail) => {
    child.once('exit', (code) => fail(new Error(`${script} exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      try {
        const { port } = JSON.parse(line) as { port?: number };
        if (typeof port === 'number') done(port);
      } catch {
        // Not the port line.
      }
    });
  });
  await assertNodeProcess(child.pid as number, script);
  return { child, port, inspectorPort: inspector.port, stop: () => stopChild(child) };
}

interface Atrium extends RunningService {
  inspectorPort: number;
}

async function startAtrium(env: Record<string, string>): Promise<Atrium> {
  const inspector = await inspectorEnv();
  const service = await startService({ ...SERVICE_ENV, ...inspector.env, ...env });
  try {
    await assertNodeProcess(service.child.pid as number, 'src/main.ts');
  } catch (error) {
    await stopService(service);
    throw error;
  }
  return Object.assign(service, { inspectorPort: inspector.port });
}

async function wsConnectionGauge(httpPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const match = /^atrium_ws_connections(?:\{[^}]*\})? (\d+(?:\.\d+)?)/m.exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** After the clients closed: waits until the gateway has let every socket go, then a little more. */
async function waitForNoConnections(httpPort: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await wsConnectionGauge(httpPort)) === 0) break;
    await sleep(250);
  }
  await sleep(2_000);
}

// ---------------------------------------------------------------------------------------------
// Tokens for synthetic users.

/** Signs access tokens with the key in `<dataDir>/keys`, as the service that generated it would. */
async function tokenIssuer(dataDir: string) {
  const config = configFrom({ DATA_DIR: dataDir });
  const kv = new MemoryKv();
  const tokens = new AccessTokens({
    keys: await loadKeyRing(config),
    kv,
    issuer: config.JWT_ISSUER,
    ttlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
  });
  return {
    async issue(count: number, label: string): Promise<string[]> {
      const started = performance.now();
      const issued: string[] = [];
      for (let i = 0; i < count; i++) {
        issued.push(await tokens.issue({ id: newId(), sessionId: newId(), roles: ['user'] }));
      }
      if (count >= 1000) {
        progress(
          `${label}: signed ${count} access tokens in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      }
      return issued;
    },
    close: () => kv.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// WebSocket clients.

/** Opens one socket in this process and resolves once its auth frame (id 1) was acknowledged. */
function authedSocket(url: string, token: string): Promise<WebSocket> {
  return new Promise((done, fail) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const timer = setTimeout(() => {
      ws.terminate();
      fail(new Error(`no auth ack from ${url}`));
    }, 30_000);
    const onMessage = (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number; code?: string };
      if (frame.id !== 1) return;
      clearTimeout(timer);
      ws.off('message', onMessage);
      if (frame.t === 'ack') done(ws);
      else {
        ws.terminate();
        fail(new Error(`auth refused by ${url}: ${frame.code ?? frame.t}`));
      }
    };
    ws.on('message', onMessage);
    ws.once('open', () => ws.send(encode({ t: 'auth', id: 1, d: { token } })));
    ws.once('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
  });
}

function closeSocket(ws: WebSocket): Promise<void> {
  return new Promise((done) => {
    if (ws.readyState === WebSocket.CLOSED) return done();
    const timer = setTimeout(() => {
      ws.terminate();
      done();
    }, 5_000);
    ws.once('close', () => {
      clearTimeout(timer);
      done();
    });
    ws.close(1000);
  });
}

/** One authenticated connection and one heartbeat, so the idle baseline is a warm process. */
async function warmUp(url: string, token: string): Promise<void> {
  const ws = await authedSocket(url, token);
  await new Promise<void>((done, fail) => {
    ws.on('message', (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number };
      if (frame.id !== 2) return;
      if (frame.t === 'ack') done();
      else fail(new Error(`warm-up heartbeat answered ${JSON.stringify(frame)}`));
    });
    ws.send(encode({ t: 'presence.heartbeat', id: 2 }));
  });
  await closeSocket(ws);
}

interface HeldTarget {
  url: string;
  tokens: string[];
}

interface HeldSockets {
  /** Authenticated connections held, per target. */
  authed: number[];
  failed: number;
  failures: Record<string, number>;
  retries: number;
  ms: number;
  close(): Promise<{ dropped: Record<string, number> }>;
  kill(): void;
}

/**
 * Opens every target's tokens as idle authenticated sockets, spread over client processes of at
 * most PER_HOLDER sockets each, CONNECT_CONCURRENCY connecting at once in total.
 */
async function holdSockets(label: string, targets: HeldTarget[]): Promise<HeldSockets> {
  const plan = targets.flatMap((target, index) => {
    const chunks: { target: number; url: string; tokens: string[] }[] = [];
    for (let start = 0; start < target.tokens.length; start += PER_HOLDER) {
      chunks.push({ target: index, url: target.url, tokens: target.tokens.slice(start, start + PER_HOLDER) });
    }
    return chunks;
  });
  const total = targets.reduce((sum, t) => sum + t.tokens.length, 0);
  const concurrency = Math.max(1, Math.floor(CONNECT_CONCURRENCY / plan.length));
  progress(
    `${label}: opening ${total} sockets from ${plan.length} client process(es), ${concurrency * plan.length} connecting at once...`,
  );
  const started = performance.now();
  let authedSoFar = 0;
  let nextMark = PROGRESS_STEP;
  const holders = plan.map((chunk) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/socket-holder.ts'], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let onReady: (report: ReadyReport) => void = () => {};
    let onClosed: (report: ClosedReport) => void = () => {};
    let onExit: (error: Error) => void = () => {};
    const ready = new Promise<ReadyReport>((done, fail) => {
      onReady = done;
      onExit = fail;
    });
    const closed = new Promise<ClosedReport>((done) => {
      onClosed = done;
    });
    child.on('message', (message: HolderReport) => {
      if (message.type === 'progress') {
        authedSoFar += message.authed;
        while (authedSoFar >= nextMark) {
          progress(
            `${label}: ${nextMark}/${total} authenticated (${((performance.now() - started) / 1000).toFixed(1)} s)`,
          );
          nextMark += PROGRESS_STEP;
        }
      } else if (message.type === 'ready') onReady(message);
      else if (message.type === 'closed') onClosed(message);
    });
    child.once('exit', (code, signal) => {
      onExit(new Error(`a socket holder exited early (${signal ?? code})`));
      onClosed({ type: 'closed', dropped: {} });
    });
    child.send({
      type: 'open',
      url: chunk.url,
      tokens: chunk.tokens,
      concurrency,
      progressEvery: 100,
    } satisfies HolderCommand);
    return { child, chunk, ready, closed };
  });
  const kill = () => {
    for (const { child } of holders) if (!exited(child)) child.kill('SIGKILL');
  };
  try {
    let timer: NodeJS.Timeout | undefined;
    const reports = await Promise.race([
      Promise.all(holders.map((h) => h.ready)),
      new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`${label}: sockets not ready in time`)), READY_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const authed = targets.map(() => 0);
    const failures: Record<string, number> = {};
    let failed = 0;
    let retries = 0;
    reports.forEach((report, index) => {
      const target = holders[index]?.chunk.target as number;
      authed[target] = (authed[target] ?? 0) + report.authed;
      failed += report.failed;
      retries += report.retries;
      for (const [reason, count] of Object.entries(report.failures))
        failures[reason] = (failures[reason] ?? 0) + count;
    });
    const ms = performance.now() - started;
    progress(
      `${label}: ${authed.reduce((a, b) => a + b, 0)}/${total} authenticated in ${(ms / 1000).toFixed(1)} s` +
        ` (${failed} failed, ${retries} retried)${failed ? ` ${JSON.stringify(failures)}` : ''}`,
    );
    return {
      authed,
      failed,
      failures,
      retries,
      ms,
      kill,
      async close() {
        progress(`${label}: closing the sockets...`);
        for (const { child } of holders) {
          if (!exited(child)) child.send({ type: 'close' } satisfies HolderCommand);
        }
        const dropped: Record<string, number> = {};
        for (const report of await Promise.all(holders.map((h) => h.closed))) {
          for (const [code, count] of Object.entries(report.dropped))
            dropped[code] = (dropped[code] ?? 0) + count;
        }
        await Promise.all(holders.map(({ child }) => stopChild(child, 5_000)));
        return { dropped };
      },
    };
  } catch (error) {
    kill();
    throw error;
  }
}

interface IdleServer {
  name: string;
  pid: number;
  inspectorPort: number;
  wsUrl: string;
  /** Atrium's HTTP port, for the connection gauge; bare servers have none. */
  httpPort?: number;
  tokens: string[];
  warmToken: string;
}

interface IdleResult {
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

interface IdleRun {
  servers: IdleResult[];
  /** Readings whose wait hit the cap before RSS was steady. */
  unsteady: string[];
  failed: number;
  retries: number;
  dropped: Record<string, number>;
  openSeconds: number;
}

const perConnection = (r: IdleResult, after: number, before = r.baselineKiB) => (after - before) / r.held;

interface HeapUsage {
  usedSize: number;
  totalSize: number;
}

/**
 * Warm-up, idle RSS, then every server's tokens held as idle sockets: RSS 3 s after they are all
 * authenticated (the figure the target is about), again after a long idle stretch, and once more
 * after a forced full GC; then close.
 */
async function measureIdle(label: string, servers: IdleServer[]): Promise<IdleRun> {
  const pids = servers.map((s) => s.pid);
  const gc = () => Promise.all(servers.map((s) => collectGarbage(s.pid, s.inspectorPort)));
  const heapUsage = () =>
    Promise.all(
      servers.map(
        async (s) => (await inspect(s.pid, s.inspectorPort, ['Runtime.getHeapUsage']))[0] as HeapUsage,
      ),
    );
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
  const heapTotalBaseline = (await heapUsage()).map((h) => h.totalSize / 1024);
  progress(`${label}: idle RSS ${baseline.map((kib) => `${mib(kib)} MiB`).join(', ')}`);
  const held = await holdSockets(
    label,
    servers.map((s) => ({ url: s.wsUrl, tokens: s.tokens })),
  );
  const readyAt = performance.now();
  try {
    const loaded = await settledRss(pids);
    const heapTotalLoaded = (await heapUsage()).map((h) => h.totalSize / 1024);
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
    const heapTotalAfterGc = (await heapUsage()).map((h) => h.totalSize / 1024);
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
      retries: held.retries,
      dropped,
      openSeconds: held.ms / 1000,
    };
  } catch (error) {
    held.kill();
    throw error;
  }
}

interface CpuUse {
  /** CPU cores the server process used during the measured window. */
  serverCores: number;
  /** CPU cores this (client) process used during the measured window. */
  clientCores: number;
  /** CPU cores busy on the whole machine during the window (other processes included). */
  machineCores: number;
}

interface FrameLoad extends CpuUse {
  framesPerSecond: number;
  connections: number;
  inFlight: number;
  errors: Record<string, number>;
}

/**
 * LOAD_CONNECTIONS authenticated sockets, each keeping IN_FLIGHT `presence.heartbeat` frames with
 * ids outstanding; acks are counted for `seconds` after a WARMUP_SECONDS warm-up.
 */
async function frameLoad(
  url: string,
  tokens: string[],
  seconds: number,
  serverPid: number,
): Promise<FrameLoad> {
  const sockets = await Promise.all(tokens.map((token) => authedSocket(url, token)));
  let counting = false;
  let stopping = false;
  let acks = 0;
  const errors: Record<string, number> = {};
  const drained = sockets.map(
    (ws) =>
      new Promise<void>((done) => {
        let nextId = 2;
        let outstanding = 0;
        const send = () => {
          outstanding++;
          ws.send(encode({ t: 'presence.heartbeat', id: nextId++ }));
        };
        ws.on('message', (data: Buffer) => {
          const frame = decode(data) as { t?: string; id?: number; code?: string };
          if (frame.id === undefined) return;
          outstanding--;
          if (frame.t === 'ack') {
            if (counting) acks++;
          } else {
            const code = frame.code ?? String(frame.t);
            errors[code] = (errors[code] ?? 0) + 1;
          }
          if (!stopping) send();
          else if (outstanding === 0) done();
        });
        ws.once('close', () => done());
        for (let i = 0; i < IN_FLIGHT; i++) send();
      }),
  );
  await sleep(WARMUP_SECONDS * 1000);
  const cpu = await cpuWindow(serverPid);
  counting = true;
  const started = performance.now();
  await sleep(seconds * 1000);
  counting = false;
  const elapsed = (performance.now() - started) / 1000;
  const used = await cpu();
  stopping = true;
  await Promise.race([Promise.all(drained), sleep(10_000)]);
  await Promise.all(sockets.map(closeSocket));
  return {
    framesPerSecond: acks / elapsed,
    connections: sockets.length,
    inFlight: IN_FLIGHT,
    errors,
    ...used,
  };
}

interface RestLoad extends CpuUse {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/** autocannon: REST_CONNECTIONS connections POSTing to `url` for `seconds`. */
async function restLoad(
  url: string,
  seconds: number,
  serverPid: number,
  headers: Record<string, string> = {},
): Promise<RestLoad> {
  // A short warm-up so both servers are measured after their JIT settled.
  await autocannon({ url, method: 'POST', headers, connections: REST_CONNECTIONS, duration: WARMUP_SECONDS });
  const cpu = await cpuWindow(serverPid);
  const result = await autocannon({
    url,
    method: 'POST',
    headers,
    connections: REST_CONNECTIONS,
    duration: seconds,
  });
  const used = await cpu();
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    ...used,
  };
}

/** One request by hand first: the REST figure only means something if the answer is a 200. */
async function checkRestHeartbeat(httpPort: number, token: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/api/presence/heartbeat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const body = await response.text();
  if (response.status !== 200)
    throw new Error(`POST /api/presence/heartbeat answered ${response.status}: ${body}`);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Phases.

interface SingleResults {
  database: string;
  kv: string;
  idle: IdleRun;
  frames: FrameLoad;
  rest: RestLoad;
  restBody: string;
}

/** One atrium instance with the laptop defaults: embedded PGlite in a fresh DATA_DIR, in-process KV. */
async function singlePhase(connections: number, seconds: number): Promise<SingleResults> {
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-'));
  let service: Atrium | undefined;
  try {
    progress('1 instance: starting atrium on a fresh DATA_DIR (embedded database, in-process KV)...');
    service = await startAtrium({ DATA_DIR: dataDir });
    const issuer = await tokenIssuer(dataDir);
    const wsUrl = `ws://127.0.0.1:${service.wsPort}/ws`;
    try {
      const tokens = await issuer.issue(connections, '1 instance');
      const [warmToken] = await issuer.issue(1, 'warm-up');
      const idle = await measureIdle('1 instance', [
        {
          name: 'atrium',
          pid: service.child.pid as number,
          inspectorPort: service.inspectorPort,
          wsUrl,
          httpPort: service.httpPort,
          tokens,
          warmToken: warmToken as string,
        },
      ]);
      progress(
        `1 instance: presence.heartbeat frames, ${LOAD_CONNECTIONS} connections x ${IN_FLIGHT} in flight, ${seconds} s...`,
      );
      const frames = await frameLoad(
        wsUrl,
        await issuer.issue(LOAD_CONNECTIONS, 'load'),
        seconds,
        service.child.pid as number,
      );
      progress(`1 instance: ${frames.framesPerSecond.toFixed(0)} heartbeat frames/s`);
      const [restToken] = await issuer.issue(1, 'rest');
      const restBody = await checkRestHeartbeat(service.httpPort, restToken as string);
      progress(`1 instance: POST /api/presence/heartbeat, ${REST_CONNECTIONS} connections, ${seconds} s...`);
      const rest = await restLoad(
        `http://127.0.0.1:${service.httpPort}/api/presence/heartbeat`,
        seconds,
        service.child.pid as number,
        { authorization: `Bearer ${restToken}` },
      );
      progress(`1 instance: ${rest.requestsPerSecond.toFixed(0)} REST heartbeats/s, p99 ${rest.p99Ms} ms`);
      return { database: 'embedded PGlite', kv: 'in-process', idle, frames, rest, restBody };
    } finally {
      await issuer.close();
    }
  } finally {
    progress('1 instance: stopping atrium...');
    if (service) await stopService(service);
    await rm(dataDir, { recursive: true, force: true });
  }
}

interface BareResults {
  idle: IdleRun;
  echo: FrameLoad;
  fastify: RestLoad;
}

/** The comparison servers, driven by the same client code. Their tokens are only carried, never checked. */
async function barePhase(connections: number, seconds: number): Promise<BareResults> {
  const keyDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-keys-'));
  const issuer = await tokenIssuer(keyDir);
  let uwsServer: ChildServer | undefined;
  let fastifyServer: ChildServer | undefined;
  try {
    const tokens = await issuer.issue(connections, 'bare uWS');
    const [warmToken] = await issuer.issue(1, 'warm-up');
    progress('bare uWS: starting bench/bare-uws.ts...');
    uwsServer = await startChildServer('bench/bare-uws.ts');
    const wsUrl = `ws://127.0.0.1:${uwsServer.port}/ws`;
    const idle = await measureIdle('bare uWS', [
      {
        name: 'bare uWS',
        pid: uwsServer.child.pid as number,
        inspectorPort: uwsServer.inspectorPort,
        wsUrl,
        tokens,
        warmToken: warmToken as string,
      },
    ]);
    await sleep(2_000);
    progress(
      `bare uWS: msgpack echo, ${LOAD_CONNECTIONS} connections x ${IN_FLIGHT} in flight, ${seconds} s...`,
    );
    const echo = await frameLoad(
      wsUrl,
      tokens.slice(0, LOAD_CONNECTIONS),
      seconds,
      uwsServer.child.pid as number,
    );
    progress(`bare uWS: ${echo.framesPerSecond.toFixed(0)} echo frames/s`);
    await uwsServer.stop();

    progress('bare Fastify: starting bench/bare-fastify.ts...');
    fastifyServer = await startChildServer('bench/bare-fastify.ts');
    progress(`bare Fastify: POST /heartbeat, ${REST_CONNECTIONS} connections, ${seconds} s...`);
    const fastify = await restLoad(
      `http://127.0.0.1:${fastifyServer.port}/heartbeat`,
      seconds,
      fastifyServer.child.pid as number,
    );
    progress(`bare Fastify: ${fastify.requestsPerSecond.toFixed(0)} req/s, p99 ${fastify.p99Ms} ms`);
    return { idle, echo, fastify };
  } finally {
    await uwsServer?.stop();
    await fastifyServer?.stop();
    await issuer.close();
    await rm(keyDir, { recursive: true, force: true });
  }
}

interface ClusterResults {
  database: string;
  idle: IdleRun;
  frames: FrameLoad;
  rest: RestLoad;
}

/**
 * Two atrium instances sharing Redis and one Postgres database (embedded PGlite locks its data
 * directory, so two processes cannot share it); they share one DATA_DIR only for the signing key.
 */
async function clusterPhase(connectionsPerInstance: number, seconds: number): Promise<ClusterResults> {
  const database = `atrium_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-'));
  const services: Atrium[] = [];
  try {
    await admin.query(`create database ${database}`);
    const env = {
      DATA_DIR: dataDir,
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
      REDIS_URL,
    };
    progress(`2 instances: starting atrium #1 (Postgres database ${database}, Redis)...`);
    services.push(await startAtrium(env));
    progress('2 instances: starting atrium #2 with the same DATA_DIR keys, database and Redis...');
    services.push(await startAtrium(env));
    const issuer = await tokenIssuer(dataDir);
    try {
      const servers: IdleServer[] = [];
      for (const [index, service] of services.entries()) {
        const [warmToken] = await issuer.issue(1, 'warm-up');
        servers.push({
          name: `atrium #${index + 1}`,
          pid: service.child.pid as number,
          inspectorPort: service.inspectorPort,
          wsUrl: `ws://127.0.0.1:${service.wsPort}/ws`,
          httpPort: service.httpPort,
          tokens: await issuer.issue(connectionsPerInstance, `2 instances, #${index + 1}`),
          warmToken: warmToken as string,
        });
      }
      const idle = await measureIdle('2 instances', servers);
      const first = services[0] as Atrium;
      progress(`2 instances: presence.heartbeat frames on #1 (Redis KV), ${seconds} s...`);
      const frames = await frameLoad(
        `ws://127.0.0.1:${first.wsPort}/ws`,
        await issuer.issue(LOAD_CONNECTIONS, 'load'),
        seconds,
        first.child.pid as number,
      );
      progress(`2 instances: ${frames.framesPerSecond.toFixed(0)} heartbeat frames/s on #1`);
      const [restToken] = await issuer.issue(1, 'rest');
      await checkRestHeartbeat(first.httpPort, restToken as string);
      progress(`2 instances: POST /api/presence/heartbeat on #1 (Redis KV), ${seconds} s...`);
      const rest = await restLoad(
        `http://127.0.0.1:${first.httpPort}/api/presence/heartbeat`,
        seconds,
        first.child.pid as number,
        { authorization: `Bearer ${restToken}` },
      );
      progress(`2 instances: ${rest.requestsPerSecond.toFixed(0)} REST heartbeats/s on #1`);
      return { database: 'Postgres 127.0.0.1:5432', idle, frames, rest };
    } finally {
      await issuer.close();
    }
  } finally {
    progress('2 instances: stopping atrium and dropping the bench database...');
    await Promise.all(services.map(stopService));
    await admin.query(`drop database if exists ${database} with (force)`).catch((error) => {
      progress(`could not drop database ${database}: ${error}`);
    });
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Report.

const kib = (value: number) => value.toFixed(2);
const mib = (valueKiB: number) => (valueKiB / 1024).toFixed(1);
const whole = (value: number) => Math.round(value).toLocaleString('en-US');
const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const verdict = (met: boolean) => (met ? '**met**' : '**not met**');
const cores = (value: number) => value.toFixed(2);

function errorsCell(errors: Record<string, number>): string {
  const entries = Object.entries(errors);
  return entries.length === 0 ? '0' : entries.map(([code, count]) => `${count} x ${code}`).join(', ');
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
  const unsteady =
    run.unsteady.length === 0
      ? ''
      : ` RSS was still moving when the wait ended for: ${run.unsteady.join(', ')}.`;
  return `- ${label}: opened and authenticated in ${run.openSeconds.toFixed(1)} s; ${run.failed} failed, ${run.retries} connect attempts retried, ${early} closed by the server while held.${unsteady}`;
}

function frameRow(label: string, backend: string, load: FrameLoad): string {
  const usPerFrame = (load.serverCores * 1e6) / load.framesPerSecond;
  return `| ${label} | ${backend} | ${load.connections} x ${load.inFlight} | **${whole(load.framesPerSecond)}** | ${cores(load.serverCores)} | ${usPerFrame.toFixed(1)} | ${cores(load.clientCores)} | ${cores(load.machineCores)} | ${errorsCell(load.errors)} |`;
}

function restRow(label: string, backend: string, load: RestLoad): string {
  const usPerRequest = (load.serverCores * 1e6) / load.requestsPerSecond;
  return `| ${label} | ${backend} | **${whole(load.requestsPerSecond)}** | ${load.p50Ms} | ${load.p99Ms} | ${cores(load.serverCores)} | ${usPerRequest.toFixed(1)} | ${cores(load.clientCores)} | ${cores(load.machineCores)} | ${load.errors + load.non2xx} |`;
}

function buildReport(
  options: Options,
  seconds: number,
  code: string,
  single: SingleResults | undefined,
  bare: BareResults | undefined,
  cluster: ClusterResults | undefined,
): string {
  const n = options.connections;
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const notRun = (what: string) => `| ${what} | (not run) | | | | | | |`;
  const out: string[] = [];
  out.push(`# Realtime benchmark

Run ${new Date().toISOString()} on Node ${process.version}, ${availableParallelism()} cores (${cpu}),
${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM. Servers, client processes and load generators share the
machine's cores. N = ${whole(n)} idle sockets per instance; ${seconds} s per throughput scenario after a ${WARMUP_SECONDS} s warm-up.
Usage: \`npm run bench -- realtime [--seconds N] [--connections N] [--phases single,bare,cluster]\`.
${code}

Backends: "1 instance" is the laptop default, embedded PGlite in a fresh DATA_DIR and the in-process
KV store; "2 instances" share Redis (127.0.0.1:6379) and a Postgres database created for the run on
127.0.0.1:5432 (dropped afterwards; PGlite locks its data directory, so two processes cannot share
it), and one DATA_DIR for the signing key only.

Users are synthetic: their access tokens are signed by the benchmark with the service's own key
(read from DATA_DIR/keys after the service generated it) for fresh UUID v7 user and session ids that
are not in the database. The gateway and the REST hook only check the RS256 signature, the claims
and the revoked-session mark, so these authenticate like real users. But when one comes online the
presence publish looks the user up, finds no row and stops: no DB-backed presence event is built
or published, so the connect path here is cheaper than for real users by that event.

The service ran with ${Object.entries(SERVICE_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')} (the config refuses a frame limit above 100,000),
everything else at its defaults (PRESENCE_TTL_SECONDS=60, WS_IDLE_TIMEOUT_SECONDS=120). Each server
was also given \`--inspect-port\` on loopback so the benchmark can force a full GC through the
inspector (activated with SIGUSR1 only for the memory readings).
`);

  out.push(`## Idle authenticated sockets

Each socket connects to /ws, sends \`{t: 'auth', id: 1, d: {token}}\` (msgpack), waits for its ack and
then stays idle (the ws client answers the server's automatic pings). The sockets come from client
processes (bench/socket-holder.ts) of at most ${whole(PER_HOLDER)} sockets each, ${CONNECT_CONCURRENCY} connecting at once in total.
The bare server (bench/bare-uws.ts: uWebSockets.js with the gateway's transport settings) answers
every frame, the auth frame included, with \`{t: 'ack', id}\` and keeps no state of its own.

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
${[
  single ? idleRows(single.idle, `${single.database}, ${single.kv} KV`) : notRun('atrium'),
  cluster ? idleRows(cluster.idle, `${cluster.database}, Redis`) : notRun('atrium x 2'),
  bare ? idleRows(bare.idle, 'none') : notRun('bare uWS'),
].join('\n')}

${[
  single && idleNotes('1 instance', single.idle),
  cluster && idleNotes('2 instances', cluster.idle),
  bare && idleNotes('bare uWS', bare.idle),
]
  .filter(Boolean)
  .join('\n')}

Where the memory is, per socket, with the sockets held after the forced GC (V8 figures from the
inspector's Runtime.getHeapUsage): live V8 objects; V8 heap committed beyond them; and the rest of
the RSS growth, outside the V8 heap's committed size (uWS's per-socket state, malloc arenas,
PGlite's WASM memory, and heap pages V8 has freed but not yet returned to the OS).
The last column is the V8 heap's committed size idle and ${SETTLE_MS / 1000} s after the last ack, beside the RSS
growth at that moment: the burst of opening the sockets leaves the heap grown, and V8 only gives
that back once it has been idle for a while.

| server | RSS KiB/conn | V8 live KiB/conn | V8 committed, free KiB/conn | outside V8 KiB/conn | V8 heap committed MiB ${SETTLE_MS / 1000} s after the last ack |
|---|---|---|---|---|---|
${[
  single && breakdownRows(single.idle),
  cluster && breakdownRows(cluster.idle),
  bare && breakdownRows(bare.idle),
]
  .filter(Boolean)
  .join('\n')}
`);
  const targets: string[] = [];
  const idleTarget = (label: string, results: IdleResult[]) => {
    const at = (pick: (r: IdleResult) => number) =>
      results.map((r) => kib(perConnection(r, pick(r)))).join(' and ');
    const worst = Math.max(...results.map((r) => perConnection(r, r.loadedKiB)));
    const total = results.reduce((sum, r) => sum + r.held, 0);
    targets.push(
      `- ${label}, ${whole(total)} sockets: ${at((r) => r.loadedKiB)} KiB/connection ${SETTLE_MS / 1000} s after the last ack; target <= ${TARGET_KIB_PER_CONNECTION} KiB: ${verdict(worst <= TARGET_KIB_PER_CONNECTION)}. ` +
        `Left alone until RSS was steady: ${at((r) => r.loadedLaterKiB)} KiB (${verdict(Math.max(...results.map((r) => perConnection(r, r.loadedLaterKiB))) <= TARGET_KIB_PER_CONNECTION)} there); after a forced GC: ${at((r) => r.loadedAfterGcKiB)} KiB.`,
    );
  };
  if (single) idleTarget('1 instance', single.idle.servers);
  if (cluster) idleTarget('2 instances', cluster.idle.servers);
  if (bare) {
    const r = bare.idle.servers[0] as IdleResult;
    targets.push(
      `- bare uWS, same sockets and client (reference): ${kib(perConnection(r, r.loadedKiB))} KiB/connection ${SETTLE_MS / 1000} s after the last ack, ${kib(perConnection(r, r.loadedLaterKiB))} left alone, ${kib(perConnection(r, r.loadedAfterGcKiB))} after a forced GC.`,
    );
  }
  out.push(`${targets.join('\n')}\n`);

  out.push(`## Heartbeat frames/s

${LOAD_CONNECTIONS} authenticated sockets in the benchmark process, each keeping ${IN_FLIGHT} \`{t: 'presence.heartbeat', id}\`
frames outstanding; a frame counts when its ack arrives within the ${seconds} s window. In atrium each
frame passes the frame rate limiter, envelope and payload validation and the auth gate; the handler
builds a service context and the heartbeat refreshes the user's presence key and its TTL in the KV
store and records the sighting. The echo is bench/bare-uws.ts decoding each frame and answering
\`{t: 'ack', id}\`, driven by the same client code. CPU columns are cores in use during the window
(1.00 = one core busy): the server process, the client (this process) and the whole machine; server
µs/frame = server CPU time per acknowledged frame.

| server | backends | sockets x in flight | frames/s | server CPU | server µs/frame | client CPU | machine CPU | error frames |
|---|---|---|---|---|---|---|---|---|
${[
  single && frameRow('atrium, 1 instance', `${single.database}, ${single.kv} KV`, single.frames),
  cluster && frameRow('atrium #1 of 2', `${cluster.database}, Redis`, cluster.frames),
  bare && frameRow('bare uWS msgpack echo', 'none', bare.echo),
]
  .filter(Boolean)
  .join('\n')}
`);
  if (single && bare) {
    const ratio = single.frames.framesPerSecond / bare.echo.framesPerSecond;
    out.push(
      `atrium (1 instance, in-process KV) acknowledges ${pct(ratio)} of the echo's frames/s; target >= ${pct(TARGET_WS_RATIO)}: ${verdict(ratio >= TARGET_WS_RATIO)}.${
        cluster
          ? ` With Redis as the KV store (instance #1 of 2): ${pct(cluster.frames.framesPerSecond / bare.echo.framesPerSecond)} of the echo.`
          : ''
      }\n`,
    );
  }

  out.push(`## REST heartbeat

autocannon in the benchmark process, ${REST_CONNECTIONS} connections, ${seconds} s after a ${WARMUP_SECONDS} s warm-up. atrium:
\`POST /api/presence/heartbeat\` with one synthetic user's bearer token for every request (the onRequest
hook verifies the token, then the heartbeat sets the KV key and records last-seen; the answer is 200${single ? ` \`${single.restBody}\`` : ''}).
With a single token, a verifier that remembers verified tokens checks the RS256 signature once and
then only expiry and revocation.
Bare: Fastify 5 with no logger, hooks or plugins (bench/bare-fastify.ts), \`POST /heartbeat\` answering
a JSON object of the same shape.

| server | backends | req/s | p50 ms | p99 ms | server CPU | server µs/req | client CPU | machine CPU | errors + non-2xx |
|---|---|---|---|---|---|---|---|---|---|
${[
  single && restRow('atrium, 1 instance', `${single.database}, ${single.kv} KV`, single.rest),
  cluster && restRow('atrium #1 of 2', `${cluster.database}, Redis`, cluster.rest),
  bare && restRow('bare Fastify', 'none', bare.fastify),
]
  .filter(Boolean)
  .join('\n')}
`);
  if (single && bare) {
    const ratio = single.rest.requestsPerSecond / bare.fastify.requestsPerSecond;
    out.push(
      `atrium (1 instance, in-process KV) serves ${pct(ratio)} of the bare Fastify req/s; target >= ${pct(TARGET_REST_RATIO)}: ${verdict(ratio >= TARGET_REST_RATIO)}.${
        cluster
          ? ` With Redis (instance #1 of 2): ${pct(cluster.rest.requestsPerSecond / bare.fastify.requestsPerSecond)}.`
          : ''
      }\n`,
    );
  }
  return out.join('\n');
}

interface CodeState {
  head: string;
  /** Uncommitted changes to the service's code (git status of src, protocol, migrations). */
  dirty: string[];
  /** Changes whenever the service's code does, committed or not. */
  fingerprint: string;
}

/** Which code the service ran (read-only git queries); other people may be changing it meanwhile. */
function codeState(): CodeState | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  try {
    const paths = ['--', 'src', 'protocol', 'migrations'];
    const head = git('rev-parse', '--short', 'HEAD').trim();
    const status = git('status', '--porcelain', ...paths);
    const diff = git('diff', 'HEAD', ...paths);
    const dirty = status
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(3));
    return { head, dirty, fingerprint: `${head}\n${status}\n${diff}` };
  } catch {
    return undefined;
  }
}

function codeLine(before: CodeState | undefined, after: CodeState | undefined): string {
  if (!before) return 'Service code: not a git checkout.';
  const dirty =
    before.dirty.length === 0
      ? 'no uncommitted changes'
      : `uncommitted changes in ${before.dirty.join(', ')}`;
  const changed =
    after && after.fingerprint !== before.fingerprint
      ? ` **The service's code changed during the run** (now ${after.head}${after.dirty.length ? ' with uncommitted changes' : ''}); phases started later may have run different code.`
      : ' It did not change during the run.';
  return `Service code: commit ${before.head}, ${dirty} in src, protocol and migrations.${changed}`;
}

export async function run(seconds: number): Promise<string> {
  const options = optionsFromArgv();
  const codeBefore = codeState();
  const n = options.connections;
  progress(
    `Node ${process.version}, ${availableParallelism()} cores, N = ${n} sockets per instance, ${seconds} s per throughput scenario, phases: ${[...options.phases].join(', ')}`,
  );
  const single = options.phases.has('single') ? await singlePhase(n, seconds) : undefined;
  const bare = options.phases.has('bare') ? await barePhase(n, seconds) : undefined;
  const cluster = options.phases.has('cluster') ? await clusterPhase(n, seconds) : undefined;
  const report = buildReport(options, seconds, codeLine(codeBefore, codeState()), single, bare, cluster);
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/realtime.md', report);
  console.log(report);
  return report;
}
