import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { codeLine, codeState } from './realtime/code-state.js';
import { cores, kib, mib, pct, whole } from './realtime/format.js';
import { type IdleResult, type IdleServer, measureIdle, perConnection } from './realtime/idle-memory.js';
import { collectGarbage } from './realtime/inspector.js';
import { optionsFromArgv } from './realtime/options.js';
import { atriumIdleServer, withSharedBackends } from './realtime/phases.js';
import { progress } from './realtime/progress.js';
import {
  checkRestHeartbeat,
  REST_CONNECTIONS,
  type RestWindow,
  restContender,
} from './realtime/rest-load.js';
import {
  type ContenderRounds,
  interleavedRounds,
  type RoundSchedule,
  ratio,
  roundSchedule,
  summarize,
  WARMUP_SECONDS,
} from './realtime/rounds.js';
import {
  type Atrium,
  type BareServer,
  startAtrium,
  startBareServer,
  stopAtrium,
} from './realtime/servers.js';
import { tokenIssuer } from './realtime/tokens.js';
import { npmStartArgs } from './service.js';

/**
 * The service's V8 young-generation flags compared (why npm start sets them: docs/operations.md,
 * "Node runtime flags"). REST: atrium instances started with different semi-space flags, each
 * loaded, collected and left quiet, then POST heartbeats in interleaved rounds beside bare Fastify
 * given the same treatment. Memory: two instances sharing Redis and Postgres, one with Node's
 * default young generation and one with npm start's flags, holding idle sockets at the same time.
 * Usage: `npm run bench -- node-flags [--seconds N] [--connections N]`; writes
 * bench/results/node-flags.md.
 */

const SEMI_SPACE_FLAG = /^--((min|max)-semi-space-size|semi-space-growth-factor)=/;
/** More rounds than the realtime benchmark: the variants' differences are small beside the drift. */
const MAX_ROUNDS = 8;
/** After the forced GC: long enough for V8's own follow-up collections to be over. */
const QUIET_MS = 5_000;

interface Variant {
  name: string;
  /** Node arguments: npm start's, with its semi-space flags replaced by the variant's. */
  args: string[];
}

function variants(startArgs: string[]): Variant[] {
  const others = startArgs.filter((arg) => !SEMI_SPACE_FLAG.test(arg));
  const own = startArgs.filter((arg) => SEMI_SPACE_FLAG.test(arg));
  const flagged = (name: string, flags: string[]) => ({ name, args: [...flags, ...others] });
  return [
    flagged("Node's default", []),
    flagged(`npm start (${own.join(' ') || 'no semi-space flags'})`, own),
    flagged('fixed at 8 MiB (npm start until 2026-11-30)', [
      '--min-semi-space-size=8',
      '--max-semi-space-size=8',
    ]),
    flagged('1 to 8 MiB in one step', [
      '--min-semi-space-size=1',
      '--max-semi-space-size=8',
      '--semi-space-growth-factor=8',
    ]),
  ];
}

const semiSpaceFlags = (variant: Variant) =>
  variant.args.filter((arg) => SEMI_SPACE_FLAG.test(arg)).join(' ') || 'none';

/** Embedded instances, one per variant (each its own DATA_DIR, all with the first one's key). */
async function restRounds(all: Variant[], schedule: RoundSchedule) {
  const dirs: string[] = [];
  const instances: Atrium[] = [];
  const bare: BareServer[] = [];
  try {
    for (const variant of all) {
      const dir = await mkdtemp(join(tmpdir(), 'atrium-bench-flags-'));
      if (dirs[0]) await cp(join(dirs[0], 'keys'), join(dir, 'keys'), { recursive: true });
      dirs.push(dir);
      progress(`REST: starting atrium, ${variant.name}...`);
      instances.push(await startAtrium({ DATA_DIR: dir }, variant.args));
    }
    const issuer = await tokenIssuer(dirs[0] as string);
    const [token] = await issuer.issue(1, 'rest');
    await issuer.close();
    const authorization = { authorization: `Bearer ${token}` };
    for (const instance of instances) await checkRestHeartbeat(instance.httpPort, token as string);
    const fastify = await startBareServer('bench/bare-fastify.ts');
    bare.push(fastify);
    const fastifyNotCollected = await startBareServer('bench/bare-fastify.ts');
    bare.push(fastifyNotCollected);
    const url = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
    const contenders = [
      ...instances.map((instance, index) =>
        restContender(
          (all[index] as Variant).name,
          url(instance.httpPort, '/api/presence/heartbeat'),
          instance.pid,
          authorization,
        ),
      ),
      restContender(BARE_COLLECTED, url(fastify.port, '/heartbeat'), fastify.pid, authorization),
      restContender(
        'bare Fastify, not collected',
        url(fastifyNotCollected.port, '/heartbeat'),
        fastifyNotCollected.pid,
        authorization,
      ),
    ];
    // The forced collection slows a server down only once it has served load: every server gets some first.
    progress(
      `REST: a ${WARMUP_SECONDS} s load window on every server, then a memory-reducing GC in each instance and in one bare Fastify...`,
    );
    for (const contender of contenders) await contender.window(WARMUP_SECONDS);
    for (const server of [...instances, fastify]) await collectGarbage(server.pid, server.inspectorPort);
    await sleep(QUIET_MS);
    return await interleavedRounds('REST', contenders, schedule);
  } finally {
    await Promise.all(bare.map((server) => server.stop()));
    await Promise.all(instances.map(stopAtrium));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

/** Two instances on Redis and Postgres, one per variant, holding their sockets at the same time. */
function idleMemory(pair: Variant[], connections: number): Promise<IdleResult[]> {
  return withSharedBackends('memory', async (env, dataDir) => {
    const instances: Atrium[] = [];
    try {
      for (const variant of pair) {
        progress(`memory: starting atrium, ${variant.name}...`);
        instances.push(await startAtrium(env, variant.args));
      }
      const issuer = await tokenIssuer(dataDir);
      try {
        const servers: IdleServer[] = [];
        for (const [index, instance] of instances.entries()) {
          const name = (pair[index] as Variant).name;
          const [warmToken] = await issuer.issue(1, 'warm-up');
          const tokens = await issuer.issue(connections, name);
          servers.push(atriumIdleServer(name, instance, tokens, warmToken as string));
        }
        return (await measureIdle('memory', servers)).servers;
      } finally {
        await issuer.close();
      }
    } finally {
      await Promise.all(instances.map(stopAtrium));
    }
  });
}

/** The reference of the ratios: bare Fastify given the same forced GC as the atrium instances. */
const BARE_COLLECTED = 'bare Fastify, collected';

function restTable(all: Variant[], rounds: ContenderRounds<RestWindow>[]): string {
  const fastify = rounds.find(
    (contender) => contender.name === BARE_COLLECTED,
  ) as ContenderRounds<RestWindow>;
  const rows = rounds.map((contender, index) => {
    const s = summarize(contender.windows);
    const flags = index < all.length ? semiSpaceFlags(all[index] as Variant) : '';
    const r = ratio(contender, fastify);
    const share =
      contender === fastify ? '' : `${pct(r.ratio)} (${pct(r.perRoundMin)}–${pct(r.perRoundMax)})`;
    return `| ${contender.name} | ${flags} | **${whole(s.median)}** | ${whole(s.min)}–${whole(s.max)} | ${s.serverUsPerOp.toFixed(1)} | ${cores(s.serverCores)} | ${share} |`;
  });
  return [
    '| server | semi-space flags | req/s (median) | range | server CPU µs/req | server cores | of bare Fastify, collected (per round) |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function memoryTable(pair: Variant[], results: IdleResult[]): string {
  const rows = results.map((r, index) => {
    const cell = (after: number) => `${mib(after)} (${kib(perConnection(r, after))})`;
    return `| ${r.name} | ${semiSpaceFlags(pair[index] as Variant)} | ${whole(r.held)} | ${mib(r.baselineKiB)} | **${cell(r.loadedKiB)}** | ${cell(r.loadedLaterKiB)} | ${cell(r.loadedAfterGcKiB)} | ${mib(r.heapTotalBaselineKiB)} -> ${mib(r.heapTotalLoadedKiB)} |`;
  });
  return [
    '| server | semi-space flags | sockets held | idle RSS MiB | RSS MiB (KiB/conn) 3 s after the last ack | left alone | after forced GC | V8 heap committed MiB, idle -> 3 s after |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export async function run(seconds: number): Promise<string> {
  const { connections } = optionsFromArgv();
  const schedule = roundSchedule(seconds, MAX_ROUNDS);
  const codeBefore = codeState();
  const startArgs = await npmStartArgs();
  const all = variants(startArgs);
  progress(
    `Node ${process.version}, ${availableParallelism()} cores; REST in ${schedule.rounds} rounds of ${schedule.windowSeconds} s, ` +
      `memory with ${connections} sockets per instance`,
  );
  const rest = await restRounds(all, schedule);
  const pair = [all[0] as Variant, all[1] as Variant];
  const memory = await idleMemory(pair, connections);
  const report = `# Node flags benchmark: the young generation's size

Run ${new Date().toISOString()} on Node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}).
Usage: \`npm run bench -- node-flags [--seconds N] [--connections N]\`. Why the service runs with
these flags: docs/operations.md, "Node runtime flags".

${codeLine(codeBefore, codeState())}

Every instance runs npm start's command line (\`node ${startArgs.join(' ')}\`) with its
semi-space flags replaced by the variant's.

## REST heartbeats after a quiet spell

One embedded instance per variant (PGlite, in-process KV), all up at once, and two bare Fastify
servers (bench/bare-fastify.ts). Every server served the load below for ${WARMUP_SECONDS} s; then each atrium
instance and one of the bare servers got a memory-reducing full GC through the inspector
(HeapProfiler.collectGarbage; V8 runs memory-reducing GCs on its own when a process goes quiet),
then ${QUIET_MS / 1000} s of quiet. The load: \`POST /api/presence/heartbeat\` with one user's bearer token
(the bare servers get the same requests), ${REST_CONNECTIONS} autocannon connections, in ${schedule.rounds} interleaved rounds
of ${schedule.windowSeconds} s windows after a warm-up window each. Figures are medians over the rounds. The
inspector's forced collection by itself leaves a Node HTTP server that has served load slower for
minutes, bare Fastify too (compare the two bare rows), so "of bare Fastify, collected" divides by
the bare server given the same collection; the range in brackets is the same ratio round by round.
A server whose turn it is not sits idle, which is the quiet spell again.

${restTable(all, rest)}

## Idle sockets, two instances on Redis and Postgres

Two instances sharing Redis and one Postgres database, one with Node's default young generation
and one with npm start's flags, each holding ${whole(connections)} idle authenticated sockets opened at
the same time by the same client processes. Readings and method as in bench/results/realtime.md
("Idle authenticated sockets"): RSS above the idle process, per socket.

${memoryTable(pair, memory)}
`;
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/node-flags.md', report);
  console.log(report);
  return report;
}
