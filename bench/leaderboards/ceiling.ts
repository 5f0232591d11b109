import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { POOL_SIZE } from '../datapath/measure.js';
import type { PgbenchWindow } from '../datapath/pgbench.js';
import { cpuWindow } from '../realtime/process-stats.js';
import { REST_CONNECTIONS, restContender } from '../realtime/rest-load.js';
import type { Contender } from '../realtime/rounds.js';
import { startBareServer } from '../realtime/servers.js';
import type { Latency } from '../worlds/harness.js';
import type { BareJob } from './bare.js';
import { randomSubmissions } from './requests.js';

const run = promisify(execFile);

/** A job of bare.ts, but for its clients and seconds. */
export type BareWork = Omit<BareJob, 'seconds' | 'clients'>;

/** Runs bare.ts once, in a process of its own, over the service's pool size. */
async function runBare(work: BareWork, databaseUrl: string, clients: number, seconds: number) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/leaderboards/bare.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      BARE_POOL_SIZE: String(POOL_SIZE),
      BARE_LEADERBOARDS: JSON.stringify({ ...work, clients, seconds }),
    },
  });
  return JSON.parse(stdout) as { transactions: number; seconds: number; cores: number; latency: Latency };
}

/**
 * The bare script as a contender of the rounds, REST_CONNECTIONS clients, a process per window:
 * `clientCores` is that process's CPU; PostgreSQL's and Redis' are left out, as for the service.
 */
export function bareContender(
  work: BareWork,
  databaseUrl: string,
): Contender<PgbenchWindow> & { close(): Promise<void> } {
  return {
    name: `bare ioredis + \`pg\`, ${REST_CONNECTIONS} clients, pool ${POOL_SIZE}`,
    async window(seconds) {
      const cpu = await cpuWindow(process.pid);
      const done = await runBare(work, databaseUrl, REST_CONNECTIONS, seconds);
      const used = await cpu();
      const perSecond = done.transactions / done.seconds;
      return {
        ...used,
        perSecond,
        meanMs: (REST_CONNECTIONS / perSecond) * 1000,
        clientCores: done.cores,
        serverCores: Number.NaN,
      };
    },
    close: async () => {},
  };
}

/** The bare script's latency with one client, one operation at a time, for `seconds`. */
export async function bareLatency(work: BareWork, databaseUrl: string, seconds: number): Promise<Latency> {
  return (await runBare(work, databaseUrl, 1, seconds)).latency;
}

/**
 * bare.ts serving the same work over HTTP (bare Fastify), under the service's REST load: the
 * pages as GET, the submissions as POST {score} of a random submitter (scores.ts) named in a
 * header. Its figures are the service's kind: `serverCores` the bare server's, `clientCores`
 * autocannon's (this process). `url` is the bare server's, for one client's latency too.
 */
export async function bareHttpContender(
  work: BareWork,
  databaseUrl: string,
): Promise<Contender<PgbenchWindow> & { url: string; close(): Promise<void> }> {
  const server = await startBareServer('bench/leaderboards/bare.ts', {
    DATABASE_URL: databaseUrl,
    BARE_POOL_SIZE: String(POOL_SIZE),
    BARE_LEADERBOARDS: JSON.stringify({ ...work, clients: 0, seconds: 0, serve: true }),
  });
  const url = `http://127.0.0.1:${server.port}`;
  const rest =
    work.operation === 'submit'
      ? restContender(
          'bare Fastify',
          `${url}/submit`,
          server.pid,
          {},
          randomSubmissions(work.submitters as number, work.t0 as number, (n) => ({
            'x-submitter': String(n),
          })),
        )
      : restContender('bare Fastify', `${url}/page`, server.pid, {}, { method: 'GET' });
  return {
    name: `bare Fastify + ioredis + \`pg\` over HTTP, ${REST_CONNECTIONS} connections, pool ${POOL_SIZE}`,
    url,
    async window(seconds) {
      const w = await rest.window(seconds);
      return { ...w, meanMs: (REST_CONNECTIONS / w.perSecond) * 1000 };
    },
    close: () => server.stop(),
  };
}
