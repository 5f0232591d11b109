import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LOAD_CONNECTIONS } from './frame-load.js';
import { type IdleRun, type IdleServer, measureIdle } from './idle-memory.js';
import { progress } from './progress.js';
import type { RoundSchedule } from './rounds.js';
import { type Atrium, type BareServer, startAtrium, startBareServer, stopAtrium } from './servers.js';
import { type Comparison, compareWithBarePeers } from './throughput.js';
import { type TokenIssuer, tokenIssuer } from './tokens.js';

/** The benchmark's phases (what each covers: PHASE_COVERS in options.ts); each stops its servers before the next starts. */

const REDIS_URL = 'redis://127.0.0.1:6379';
const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const SINGLE_BACKENDS = 'embedded PGlite, in-process KV';
export const CLUSTER_BACKENDS = 'Postgres 127.0.0.1:5432, Redis';

export interface AtriumResults {
  idle: IdleRun;
  throughput: Comparison;
}

/** An atrium instance as the idle-memory readings see it. */
export function atriumIdleServer(
  name: string,
  service: Atrium,
  tokens: string[],
  warmToken: string,
): IdleServer {
  return {
    name,
    pid: service.pid,
    inspectorPort: service.inspectorPort,
    wsUrl: `ws://127.0.0.1:${service.wsPort}/ws`,
    httpPort: service.httpPort,
    tokens,
    warmToken,
  };
}

/**
 * Stops an instance whose memory was read and starts it again with the same environment, for the
 * throughput rounds. The memory readings force full GCs through the inspector
 * (HeapProfiler.collectGarbage), after which a Node server that had already served load answers
 * HTTP some 10-15% slower for minutes: bare Fastify too, in interleaved rounds beside a twin that
 * was not collected, while V8's own collections after a minute's quiet leave no such mark. The
 * bare peers of the rounds start fresh, so the atrium instance beside them does too.
 */
async function restartForThroughput(
  label: string,
  service: Atrium,
  env: Record<string, string>,
): Promise<Atrium> {
  progress(
    `${label}: restarting atrium (pid ${service.pid}) for the throughput rounds: the forced GCs slow a process down...`,
  );
  await stopAtrium(service);
  return startAtrium(env);
}

/** An instance's throughput rounds, with tokens issued once its idle sockets are closed. */
async function compareInstance(
  label: string,
  name: string,
  service: Atrium,
  issuer: TokenIssuer,
  schedule: RoundSchedule,
): Promise<Comparison> {
  const loadTokens = await issuer.issue(LOAD_CONNECTIONS, 'load');
  const [restToken] = await issuer.issue(1, 'rest');
  const { pid, wsPort, httpPort } = service;
  return compareWithBarePeers(
    label,
    { name, pid, wsPort, httpPort, loadTokens, restToken: restToken as string },
    schedule,
  );
}

/** One atrium instance with the laptop defaults: embedded PGlite in a fresh DATA_DIR, in-process KV. */
export async function singlePhase(connections: number, schedule: RoundSchedule): Promise<AtriumResults> {
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-'));
  let service: Atrium | undefined;
  try {
    progress('1 instance: starting atrium on a fresh DATA_DIR (embedded database, in-process KV)...');
    service = await startAtrium({ DATA_DIR: dataDir });
    const issuer = await tokenIssuer(dataDir);
    try {
      const tokens = await issuer.issue(connections, '1 instance');
      const [warmToken] = await issuer.issue(1, 'warm-up');
      const idle = await measureIdle('1 instance', [
        atriumIdleServer('atrium', service, tokens, warmToken as string),
      ]);
      const measured = service;
      service = undefined; // stopped by the restart, not to be stopped again if starting fails
      service = await restartForThroughput('1 instance', measured, { DATA_DIR: dataDir });
      const throughput = await compareInstance('1 instance', 'atrium', service, issuer, schedule);
      return { idle, throughput };
    } finally {
      await issuer.close();
    }
  } finally {
    progress('1 instance: stopping atrium...');
    if (service) await stopAtrium(service);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The bare uWS server holding the same sockets, driven by the same client code; tokens are carried, never checked. */
export async function barePhase(connections: number): Promise<IdleRun> {
  const keyDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-keys-'));
  const issuer = await tokenIssuer(keyDir);
  let server: BareServer | undefined;
  try {
    const tokens = await issuer.issue(connections, 'bare uWS');
    const [warmToken] = await issuer.issue(1, 'warm-up');
    progress('bare uWS: starting bench/bare-uws.ts...');
    server = await startBareServer('bench/bare-uws.ts');
    return await measureIdle('bare uWS', [
      {
        name: 'bare uWS',
        pid: server.pid,
        inspectorPort: server.inspectorPort,
        wsUrl: `ws://127.0.0.1:${server.port}/ws`,
        tokens,
        warmToken: warmToken as string,
      },
    ]);
  } finally {
    await server?.stop();
    await issuer.close();
    await rm(keyDir, { recursive: true, force: true });
  }
}

/**
 * Runs `use` with the environment of instances sharing Redis and one Postgres database created for
 * the run (embedded PGlite locks its data directory, so two processes cannot share it); they share
 * one DATA_DIR only for the signing key. `use` must stop its instances before it returns: the
 * database is dropped afterwards.
 */
export async function withSharedBackends<T>(
  label: string,
  use: (env: Record<string, string>, dataDir: string) => Promise<T>,
): Promise<T> {
  const database = `atrium_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-realtime-'));
  try {
    await admin.query(`create database ${database}`);
    progress(`${label}: Postgres database ${database}, Redis ${REDIS_URL}`);
    return await use(
      { DATA_DIR: dataDir, DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`, REDIS_URL },
      dataDir,
    );
  } finally {
    await admin.query(`drop database if exists ${database} with (force)`).catch((error) => {
      progress(`could not drop database ${database}: ${error}`);
    });
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * Two atrium instances sharing Redis and Postgres. #1 is restarted for its throughput rounds; #2
 * stays up, idle, during them.
 */
export function clusterPhase(
  connectionsPerInstance: number,
  schedule: RoundSchedule,
): Promise<AtriumResults> {
  return withSharedBackends('2 instances', async (env, dataDir) => {
    const services: Atrium[] = [];
    try {
      progress('2 instances: starting atrium #1...');
      services.push(await startAtrium(env));
      progress('2 instances: starting atrium #2 with the same DATA_DIR keys, database and Redis...');
      services.push(await startAtrium(env));
      const issuer = await tokenIssuer(dataDir);
      try {
        const servers: IdleServer[] = [];
        for (const [index, service] of services.entries()) {
          const [warmToken] = await issuer.issue(1, 'warm-up');
          const tokens = await issuer.issue(connectionsPerInstance, `2 instances, #${index + 1}`);
          servers.push(atriumIdleServer(`atrium #${index + 1}`, service, tokens, warmToken as string));
        }
        const idle = await measureIdle('2 instances', servers);
        const measured = services.shift() as Atrium;
        const first = await restartForThroughput('2 instances, #1', measured, env);
        services.unshift(first);
        const throughput = await compareInstance('2 instances', 'atrium #1', first, issuer, schedule);
        return { idle, throughput };
      } finally {
        await issuer.close();
      }
    } finally {
      progress('2 instances: stopping atrium...');
      await Promise.all(services.map(stopAtrium));
    }
  });
}
