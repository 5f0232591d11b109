import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { configFrom } from '../../src/config.js';
import type { Backend } from '../backends.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { type Compared, compare, postgresVersion } from '../groups/measure.js';
import { progress } from '../realtime/progress.js';
import type { RoundSchedule } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import { type Latency, postgresSql, WORLDS_ENV } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { type BareWork, bareContender, bareHttpContender, bareLatency } from './ceiling.js';
import {
  checkPage,
  indexRebuilt,
  oneClientLatencies,
  type Page,
  type PageRead,
  pageRequests,
  pageTarget,
  readPage,
  submitRequests,
} from './requests.js';
import { type LeaderboardSeed, LIMIT, RECORDS, seedLeaderboard } from './seed.js';

/**
 * One backend's measurements on one service instance: the first reads (answered by SQL, timed
 * and checked) and the rank index's rebuild they start, timed; each page alone (one client) and
 * under REST_CONNECTIONS clients; then submissions. On Postgres + Redis the pages run in rounds beside the bare script
 * reading the service's own index and rows, the submissions beside it writing the board's copy
 * and a copy of the index (bare.ts); afterwards the top page is checked against SQL and the index
 * counted against the records. The embedded database has no ceiling: its KV is the service's
 * process, so a bare client of it would be a second service.
 */

export const PAGES: Page[] = ['top', 'around'];
/** Users the submissions come from (users 1..SUBMITTERS, a token each). */
export const SUBMITTERS = 10_000;

const LEADERBOARDS_ENV = {
  ...WORLDS_ENV,
  DATABASE_POOL_SIZE: String(POOL_SIZE),
  // The bench measures how fast submissions go, not the per-user rate that bounds them.
  LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: '1000000',
};

/**
 * One client, one request at a time: the service's page, the bare script's work for it (no HTTP),
 * and the same work served by bare Fastify.
 */
export interface Alone {
  service: Latency;
  bare?: Latency;
  bareHttp?: Latency;
}

export interface LeaderboardsResults {
  database: string;
  seed: LeaderboardSeed;
  /** The first reads after the start: the index not ready, answered by SQL (while they start its rebuild). */
  firstReads: Record<Page, PageRead>;
  rebuilt: { records: number; ms: number };
  alone: Record<Page, Alone>;
  pages: Record<Page, Compared>;
  submissions: Compared;
  /** Postgres: after the submissions, the top page against SQL and the index's size against the records. */
  after?: { topExact: boolean; members: number; records: number };
}

export function measureLeaderboards(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<LeaderboardsResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    // Ids of this run only: Redis outlives the run's database.
    const prefix = randomBytes(4).toString('hex');
    const env: Record<string, string> = { ...baseEnv, ...LEADERBOARDS_ENV };
    progress(`${backend}: seeding ${RECORDS} users and records with SQL...`);
    const seed = await seedLeaderboard(env, backend, prefix);
    const redis = env.REDIS_URL ? new Redis(env.REDIS_URL) : undefined;
    const index = `${configFrom(env).REDIS_KEY_PREFIX}lb:{${seed.ref}:${seed.periodStart.getTime()}}`;
    const ceilingSet = `bench:leaderboards:{${seed.ceilingRef}}:set`;
    let a: Atrium | undefined;
    let issuer: TokenIssuer | undefined;
    try {
      a = await startAtrium(env, nodeArgs);
      issuer = await tokenIssuer(dataDir);
      const [token] = (await issuer.issueFor([seed.middle.id])) as [string];
      const database = env.DATABASE_URL ? await postgresVersion(env.DATABASE_URL) : 'PGlite';

      progress(`${backend}: the first reads, answered by SQL, start the rank index's rebuild...`);
      const service = a;
      const rebuilding = indexRebuilt(service, () => readPage(service.httpPort, token, 'top', seed));
      // Awaited after the first reads: a failure meanwhile is not an unhandled rejection.
      rebuilding.catch(() => {});
      const firstReads = {} as Record<Page, PageRead>;
      for (const page of PAGES) firstReads[page] = await readPage(a.httpPort, token, page, seed);
      const rebuilt = await rebuilding;
      progress(
        `${backend}: rank index of ${rebuilt.records} records rebuilt in ${(rebuilt.ms / 1000).toFixed(1)} s`,
      );
      for (const page of PAGES) await checkPage(a.httpPort, token, page, seed);
      // The bare submissions' index: the same members, as the copy's records are the same.
      await redis?.copy(`${index}:set`, ceilingSet);

      // The bare script's work, on Postgres + Redis only (the embedded KV is the service's memory).
      const work = (job: Omit<BareWork, 'redisUrl' | 'limit'>) =>
        redis && { ...job, redisUrl: env.REDIS_URL as string, limit: LIMIT };
      const databaseUrl = env.DATABASE_URL as string;
      const period = { ref: seed.ref, periodStart: seed.periodStart.toISOString() };
      const alone = {} as Record<Page, Alone>;
      const pages = {} as Record<Page, Compared>;
      for (const page of PAGES) {
        progress(
          `${backend}: ${page} page, one client, then in rounds${redis ? ' beside the bare script' : ''}...`,
        );
        const bare = work({
          ...period,
          set: `${index}:set`,
          versions: `${index}:versions`,
          operation: page,
          userId: seed.middle.id,
        });
        const bareHttp = bare && (await bareHttpContender(bare, databaseUrl));
        try {
          const [service, overHttp] = await oneClientLatencies(
            [pageTarget(a.httpPort, token, page), ...(bareHttp ? [{ url: `${bareHttp.url}/page` }] : [])],
            seconds,
          );
          alone[page] = {
            service: service as Latency,
            ...(bare ? { bare: await bareLatency(bare, databaseUrl, seconds) } : {}),
            ...(overHttp ? { bareHttp: overHttp } : {}),
          };
        } catch (error) {
          // compare() closes it otherwise.
          await bareHttp?.close();
          throw error;
        }
        pages[page] = await compare(
          `${backend}, ${page} page`,
          pageRequests(a, token, page),
          bare && bareHttp ? [bareContender(bare, databaseUrl), bareHttp] : [],
          schedule,
        );
      }

      progress(
        `${backend}: submissions of ${SUBMITTERS} users, in rounds${redis ? ' beside the bare script' : ''}...`,
      );
      const ids = Array.from({ length: SUBMITTERS }, (_, i) => seed.idOf(i + 1));
      const t0 = Date.now();
      const bareSubmit = work({
        ref: seed.ceilingRef as string,
        periodStart: period.periodStart,
        set: ceilingSet,
        operation: 'submit',
        prefix,
        submitters: SUBMITTERS,
        t0,
      });
      const submissions = await compare(
        `${backend}, submissions`,
        submitRequests(a, await issuer.issueFor(ids), t0),
        bareSubmit
          ? [bareContender(bareSubmit, databaseUrl), await bareHttpContender(bareSubmit, databaseUrl)]
          : [],
        schedule,
      );
      const after =
        redis && (await afterSubmissions(a.httpPort, token, seed, databaseUrl, redis, `${index}:set`));
      return { database, seed, firstReads, rebuilt, alone, pages, submissions, ...(after ? { after } : {}) };
    } finally {
      await issuer?.close();
      if (a) await stopAtrium(a);
      // A million members per set: not left in the shared Redis.
      await redis?.unlink(`${index}:set`, `${index}:versions`, `${index}:ready`, ceilingSet);
      redis?.disconnect();
    }
  });
}

async function afterSubmissions(
  httpPort: number,
  token: string,
  seed: LeaderboardSeed,
  databaseUrl: string,
  redis: Redis,
  set: string,
): Promise<LeaderboardsResults['after']> {
  const sql = await postgresSql(databaseUrl);
  try {
    const where = 'where standings_ref = $1 and period_start = $2';
    const top = await sql.query<{ user_id: string }>(
      `select user_id from leaderboard_records ${where}
       order by rank_score, rank_subscore, updated_at, user_id limit ${LIMIT}`,
      [seed.ref, seed.periodStart],
    );
    const { exact: topExact } = await readPage(httpPort, token, 'top', {
      ...seed,
      top: top.map((r) => r.user_id),
    });
    const [count] = await sql.query<{ n: number }>(
      `select count(*)::int as n from leaderboard_records ${where}`,
      [seed.ref, seed.periodStart],
    );
    return { topExact, members: await redis.zcard(set), records: count?.n ?? 0 };
  } finally {
    await sql.close();
  }
}
