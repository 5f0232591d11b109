import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { machineLine } from './backends.js';
import { probeHealth } from './health-probe.js';
import { LoadProcess, measuredWindow, type PeerWindow, type Server } from './peers/load-client.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { cores, pct, whole } from './realtime/format.js';
import { withSharedBackends } from './realtime/phases.js';
import { progress } from './realtime/progress.js';
import {
  type Atrium,
  type BareServer,
  startAtrium,
  startBareServer,
  stopAtrium,
  waitForNoConnections,
} from './realtime/servers.js';
import { median } from './realtime/stats.js';
import { tokenIssuer } from './realtime/tokens.js';
import { buildService, echoWarnings, serviceNodeArgs } from './service.js';

/**
 * Connect + authenticate: sockets opened and sent their `auth` frame, `--in-flight` at a time, until
 * `--sockets` are held (the peers bench's connect row, with the same load process, without Nakama).
 * Atrium runs on Postgres + Redis as one process; the ceiling is the bare uWebSockets.js server of
 * the realtime bench, which acks the auth frame with no work, on the same client. A warm-up of
 * WARM_UP_SOCKETS each, then interleaved rounds, each side's figure the median of its rounds; the
 * sockets are closed between windows, all at once, and the next window waits until Atrium let them
 * go. While they close, a probe sends GET /healthz every PROBE_INTERVAL_MS: its longest wait is how
 * long the mass disconnect blocked the server's event loop (a reconnect storm after a node dies
 * starts with one). Usage:
 * npm run bench -- connect [--sockets N] (5000) [--in-flight N] (200) [--rounds N] (5)
 * [--env KEY=VALUE,...] (Atrium's settings, e.g. a gate's size) [--profile DIR] (a V8 CPU profile
 * of Atrium into DIR) [--compiled] (the compiled build, as production and the peers bench run it).
 * Writes bench/results/connect.md.
 */

const WARM_UP_SOCKETS = 1_000;
const PROBE_INTERVAL_MS = 10;

interface Side {
  server: Server;
  url: string;
  /** Answers as soon as the server's event loop is free. */
  probeUrl: string;
  /** Waits until the side has let the last window's sockets go. */
  settle(): Promise<void>;
}

export async function run(): Promise<string> {
  const { values } = parseArgs({
    options: {
      sockets: { type: 'string' },
      'in-flight': { type: 'string' },
      rounds: { type: 'string' },
      env: { type: 'string' },
      profile: { type: 'string' },
      compiled: { type: 'boolean' },
    },
    allowPositionals: true,
    strict: false,
  });
  const sockets = Number(values.sockets) || 5_000;
  const inFlight = Number(values['in-flight']) || 200;
  const rounds = Number(values.rounds) || 5;
  const extraEnv = Object.fromEntries(
    String(values.env ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => pair.split('=') as [string, string]),
  );
  if (values.compiled) await buildService();
  const environment = machineLine();
  const before = codeState();
  return withSharedBackends('connect', async (env, dataDir) => {
    let atrium: Atrium | undefined;
    let bare: BareServer | undefined;
    const load = new LoadProcess();
    try {
      atrium = await startAtrium(
        { ...env, ...extraEnv },
        await serviceNodeArgs(values.profile, values.compiled === true),
      );
      echoWarnings(atrium);
      bare = await startBareServer('bench/bare-uws.ts');
      const issuer = await tokenIssuer(dataDir);
      const tokens = await issuer.issue(sockets, 'connect');
      await issuer.close();
      const running = atrium;
      const sides: Side[] = [
        {
          server: { name: 'Atrium, Postgres + Redis', pid: atrium.pid, database: '', usesRedis: true },
          url: `ws://127.0.0.1:${atrium.wsPort}/ws`,
          probeUrl: `http://127.0.0.1:${atrium.httpPort}/healthz`,
          settle: () => waitForNoConnections(running.httpPort),
        },
        {
          server: { name: 'bare uWS (acks the auth frame)', pid: bare.pid, database: '', usesRedis: false },
          url: `ws://127.0.0.1:${bare.port}/ws`,
          probeUrl: `http://127.0.0.1:${bare.port}/healthz`,
          settle: () => sleep(2_000),
        },
      ];
      const connectAll = async (side: Side, some: string[]) => {
        await load.prepare({ kind: 'connect', side: 'atrium', url: side.url, tokens: some, inFlight });
        const window = await measuredWindow(side.server, load, () => load.window(0));
        const probe = probeHealth(side.probeUrl, PROBE_INTERVAL_MS);
        await load.release();
        await side.settle();
        return { window, releaseStallMs: (await probe.stop()).worstMs };
      };
      // Not counted: the first sockets of a fresh process run before its hot paths are compiled.
      for (const side of sides) await connectAll(side, tokens.slice(0, WARM_UP_SOCKETS));
      const windows: PeerWindow[][] = sides.map(() => []);
      const releaseStalls: number[][] = sides.map(() => []);
      for (let round = 0; round < rounds; round++) {
        for (let turn = 0; turn < sides.length; turn++) {
          const index = (round + turn) % sides.length;
          const side = sides[index] as Side;
          const { window, releaseStallMs } = await connectAll(side, tokens);
          windows[index]?.push(window);
          releaseStalls[index]?.push(releaseStallMs);
          progress(
            `connect, round ${round + 1}/${rounds}: ${side.server.name} ${whole(window.perSecond)}/s, ` +
              `p50 ${window.p50Ms.toFixed(1)} / p99 ${window.p99Ms.toFixed(1)} ms, errors ${JSON.stringify(window.errors)}, ` +
              `longest probe wait while they closed ${whole(releaseStallMs)} ms`,
          );
        }
      }
      const text = report({
        command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
        environment,
        code: codeLine(before, codeState()),
        loadAtEnd: loadavg()[0] ?? 0,
        sockets,
        inFlight,
        extraEnv,
        sides: sides.map((side, index) => ({
          name: side.server.name,
          windows: windows[index] ?? [],
          releaseStalls: releaseStalls[index] ?? [],
        })),
      });
      await mkdir('bench/results', { recursive: true });
      await writeFile('bench/results/connect.md', text);
      console.log(text);
      return text;
    } finally {
      load.close();
      if (bare) await bare.stop();
      if (atrium) await stopAtrium(atrium);
    }
  });
}

function report(run: {
  command: string;
  environment: string;
  code: string;
  loadAtEnd: number;
  sockets: number;
  inFlight: number;
  extraEnv: Record<string, string>;
  sides: { name: string; windows: PeerWindow[]; releaseStalls: number[] }[];
}): string {
  const rate = (windows: PeerWindow[]) => median(windows.map((w) => w.perSecond));
  const ceiling = rate(run.sides[1]?.windows ?? []);
  const rows = run.sides.map(({ name, windows, releaseStalls }) => {
    const rates = windows.map((w) => w.perSecond);
    const errors = windows.reduce((sum, w) => sum + Object.values(w.errors).reduce((a, b) => a + b, 0), 0);
    return `| ${name} | **${whole(rate(windows))}/s** (${rates.map(whole).join(', ')}) | ${pct(rate(windows) / ceiling)} | ${median(windows.map((w) => w.p50Ms)).toFixed(1)} / ${median(windows.map((w) => w.p99Ms)).toFixed(1)} | ${cores(median(windows.map((w) => w.serverCores)))} | ${whole(median(windows.map((w) => w.cpuUsPerOp)))} | ${errors} | ${whole(median(releaseStalls))} (${releaseStalls.map(whole).join(', ')}) |`;
  });
  const settings = Object.entries(run.extraEnv).map(([key, value]) => `${key}=${value}`);
  return `# Connect + authenticate benchmark

\`${run.command}\` — ${run.environment} Load average ${run.loadAtEnd.toFixed(1)} at the end. ${run.code}
${whole(run.sockets)} sockets opened and authenticated, ${run.inFlight} in flight, in ${run.sides[0]?.windows.length} interleaved rounds after a warm-up of ${whole(WARM_UP_SOCKETS)} each (bench/connect.ts). Atrium: one process, Postgres + Redis${settings.length > 0 ? `, ${settings.join(', ')}` : ', default settings'}.

| Server | Connect + auth (rounds) | Of the ceiling | p50 / p99 ms | Server cores | CPU µs per socket (server and Redis) | Errors | Longest /healthz wait while all close, ms (rounds) |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}
`;
}
