import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { machineLine } from './backends.js';
import { startSeededAtrium } from './peers/atrium.js';
import { contender, LoadProcess, measuredWindow, type Server } from './peers/load-client.js';
import { settledTreeRssKiB, steadyTreeRssKiB } from './peers/memory.js';
import { NAKAMA_VERSION, nakamaBinary, seedNakama, startNakama } from './peers/nakama.js';
import { progress } from './peers/progress.js';
import { type ConnectRound, peersReport, type RowResult, type SideInfo } from './peers/report.js';
import { ROWS, type Target } from './peers/rows.js';
import type { Side } from './peers/specs.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { interleavedRounds } from './realtime/rounds.js';

/**
 * Atrium beside Nakama (the newest release the Go module proxy serves, built once into
 * ~/.cache/atrium-bench) on the same PostgreSQL, each on its own database: Atrium in production
 * mode (compiled build, Postgres + Redis) as one process and with a worker per core, Nakama with
 * its defaults (but a longer session and outgoing queue, bench/peers/nakama.ts) and the bench's
 * runtime module. The rows of bench/peers/rows.ts in interleaved rounds, then connect + authenticate N sockets, idle memory per socket and memory at rest. Load
 * comes from a process per server (bench/peers/load.ts). Usage: npm run bench -- peers
 * [--seconds 10] [--rounds 3] [--sockets 15000] [--connect-in-flight 200] [--rows ping,heartbeat]
 * [--profile DIR]; --seconds is each window, --rows keeps the rows whose name contains one of the
 * words (and then skips the connect rounds), --profile writes a CPU profile of each Atrium process
 * into DIR. Writes bench/results/peers.md when it ran every row.
 */

const run_ = promisify(execFile);
const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASES = { one: 'atrium_peers_one', all: 'atrium_peers_all', nakama: 'nakama_peers' };

interface Running {
  server: Server;
  side: Side;
  target: Target;
  load: LoadProcess;
  restKiB: number;
  stop(): Promise<void>;
}

export async function run(seconds: number): Promise<string> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string' },
      sockets: { type: 'string' },
      'connect-in-flight': { type: 'string' },
      rows: { type: 'string' },
      profile: { type: 'string' },
    },
    allowPositionals: true,
    strict: false,
  });
  const rounds = Number(values.rounds) || 3;
  const sockets = Number(values.sockets) || 15_000;
  const connectInFlight = Number(values['connect-in-flight']) || 200;
  const words = typeof values.rows === 'string' ? values.rows.toLowerCase().split(',') : undefined;
  const rowsRun = ROWS.filter((row) => !words || words.some((word) => row.name.toLowerCase().includes(word)));
  const profile = typeof values.profile === 'string' ? values.profile : undefined;
  const schedule = { rounds, windowSeconds: seconds };
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  progress('npm run build (the compiled service production mode runs)...');
  await run_('npm', ['run', 'build']);
  await nakamaBinary();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const running: Running[] = [];
  try {
    for (const database of Object.values(DATABASES)) {
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.query(`create database ${database}`);
    }
    const versions = await versionsLine(admin);
    const cores = availableParallelism();
    for (const [name, database, redisDb, workers] of [
      ['Atrium, 1 process', DATABASES.one, 11, 1],
      [`Atrium, WORKERS=${cores}`, DATABASES.all, 12, cores],
    ] as const) {
      progress(`starting and seeding ${name}...`);
      const atrium = await startSeededAtrium(database, redisDb, workers, sockets, profile);
      running.push({
        server: { name, pid: atrium.pid, database, usesRedis: true },
        side: 'atrium',
        target: atrium,
        load: new LoadProcess(),
        restKiB: atrium.restKiB,
        stop: atrium.stop,
      });
    }
    progress('starting and seeding Nakama...');
    const nakama = await startNakama(DATABASES.nakama);
    const nakamaRest = await settledTreeRssKiB(nakama.pid);
    running.push({
      server: {
        name: `Nakama ${NAKAMA_VERSION}`,
        pid: nakama.pid,
        database: DATABASES.nakama,
        usesRedis: false,
      },
      side: 'nakama',
      target: { ...nakama, population: await seedNakama(nakama.http, sockets) },
      load: new LoadProcess(),
      restKiB: nakamaRest,
      stop: nakama.stop,
    });

    // First, while the servers have done nothing since their seeding: the calmest memory readings.
    const connect = words ? [] : await connectRounds(running, rounds, sockets, connectInFlight);
    const rows: RowResult[] = [];
    for (const row of rowsRun) {
      progress(`${row.name}...`);
      const prepared = [];
      for (const { load, side, target } of running) prepared.push(await load.prepare(row.spec(side, target)));
      const measured = await interleavedRounds(
        row.name,
        running.map(({ server, load }) => contender(server, load)),
        schedule,
      );
      for (const { load } of running) await load.release();
      rows.push({ row, rounds: measured, answerBytes: prepared.map((p) => p.answerBytes) });
    }
    const sides: SideInfo[] = running.map(({ server, restKiB }) => ({ name: server.name, restKiB }));
    const text = peersReport({
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
      environment,
      versions,
      code: codeLine(before, codeState()),
      minutes: (performance.now() - started) / 60_000,
      schedule,
      sockets,
      connectInFlight,
      sides,
      rows,
      connect,
    });
    if (!words) {
      await mkdir('bench/results', { recursive: true });
      await writeFile('bench/results/peers.md', text);
    }
    console.log(text);
    return text;
  } finally {
    for (const { load, stop } of running) {
      load.close();
      await stop();
    }
    for (const database of Object.values(DATABASES))
      await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
    await admin.end();
  }
}

/**
 * Connect + authenticate `sockets` sockets, `inFlight` at a time, in interleaved rounds; the
 * server's RSS settled before and with the sockets held gives the memory per idle socket.
 */
async function connectRounds(
  running: Running[],
  rounds: number,
  sockets: number,
  inFlight: number,
): Promise<ConnectRound[][]> {
  const results: ConnectRound[][] = running.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < running.length; turn++) {
      const index = (round + turn) % running.length;
      const { server, side, target, load } = running[index] as Running;
      progress(`connect ${sockets} sockets to ${server.name}, round ${round + 1}/${rounds}...`);
      const base = await steadyTreeRssKiB(server.pid);
      await load.prepare({
        kind: 'connect',
        side,
        url: target.ws,
        tokens: target.population.connectTokens,
        inFlight,
      });
      const window = await measuredWindow(server, load, () => load.window(0));
      const held = await steadyTreeRssKiB(server.pid);
      await load.release();
      // Lets the server finish with the closed sockets before the next side's window.
      await sleep(3_000);
      results[index]?.push({
        window,
        baseKiB: base.kib,
        heldKiB: held.kib,
        steady: base.steady && held.steady,
      });
    }
  }
  return results;
}

async function versionsLine(admin: pg.Client): Promise<string> {
  const { rows } = await admin.query<{ version: string }>('select version()');
  const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
  await redis.connect();
  const info = await redis.info('server');
  redis.disconnect();
  const { stdout: go } = await run_(process.env.GO ?? '/usr/local/go/bin/go', ['version']);
  return [
    `Nakama ${NAKAMA_VERSION} (built with ${go.trim().split(' ')[2]})`,
    rows[0]?.version.split(' on ')[0],
    `Redis ${/redis_version:(\S+)/.exec(info)?.[1]}`,
    `Node ${process.version}`,
  ].join(', ');
}
