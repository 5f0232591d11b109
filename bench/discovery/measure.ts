import { randomBytes } from 'node:crypto';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backend } from '../backends.js';
import { CHAT_ENV } from '../chat/measure.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { type Compared, compare, pgbenchCeilings, postgresVersion } from '../groups/measure.js';
import { progress } from '../realtime/progress.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import { type RoundSchedule, WARMUP_SECONDS } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import { type Latency, postgresSql } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { joinRequests, joinScript, joinVariables } from './joins.js';
import { checkSearch, type Search, searches, searchLatency, searchRequests, spelled } from './search.js';
import { type DiscoverySeed, seedDiscovery } from './seed.js';

/**
 * One backend's measurements: each search beside its statements run through `pg` and by pgbench, then the joins of one hot world beside
 * pgbench with and without the visit. pgbench runs with the service's pool size and with as many
 * clients as autocannon has connections on Postgres; on the embedded database with one client over
 * a copy of the seeded database (groups/measure.ts's pgbenchCeilings). The ranking job is held off
 * (DISCOVERY_RANK_INTERVAL_SECONDS 3600) so a 100,000-world snapshot never lands in one
 * contender's window: the seed takes the snapshot the searches rank, and times it. The fold runs
 * every 5 s as configured (it folds the ceilings' visits too).
 */

/** Joins each contender is seeded for per second of its windows (more than any reached). */
const JOINS_PER_SECOND = { service: 2_000, ceiling: 6_000 };

export interface SearchResults {
  search: Search;
  alone: Latency;
  compared: Compared;
}

export interface DiscoveryResults {
  database: string;
  pgbenchClients: number[];
  seed: DiscoverySeed;
  searches: SearchResults[];
  joins: Compared;
  /** Postgres: EXPLAIN ANALYZE of the slowest search alone, and of the join's reservation after the joins. */
  plans?: { search: string; slowest: string; reserve: string; liveReservations: number };
}

async function plansOf(
  databaseUrl: string,
  slowest: Search,
  seed: DiscoverySeed,
): Promise<DiscoveryResults['plans']> {
  const sql = await postgresSql(databaseUrl);
  try {
    const explain = async (statement: string) => {
      await sql.query('begin');
      try {
        const rows = await sql.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${statement}`);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await sql.query('rollback');
      }
    };
    const [snapshot] = await sql.query<{ key: string }>(
      'select max(snapshot_at)::text as key from discovery_ranks',
    );
    const search = await explain(
      spelled(slowest.script, { ...slowest.variables, key: snapshot?.key as string }),
    );
    const reserveStatement = joinScript(seed.prefix, false)
      .split(';\n')
      .find((s) => s.startsWith('with target')) as string;
    const reserve = await explain(
      spelled(reserveStatement, { ...joinVariables(seed.hot), n: String(seed.firstJoiner) }),
    );
    const [live] = await sql.query<{ n: number }>(
      'select count(*)::int as n from game_server_reservations where server_id = $1 and expires_at > now()',
      [seed.hot.server],
    );
    return { search, slowest: slowest.name, reserve, liveReservations: live?.n ?? 0 };
  } finally {
    await sql.close();
  }
}

export function measureDiscovery(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<DiscoveryResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    const prefix = randomBytes(4).toString('hex');
    const env: Record<string, string> = {
      ...baseEnv,
      ...CHAT_ENV,
      DISCOVERY_RANK_INTERVAL_SECONDS: '3600',
      GAMESERVER_IDLE_STOP_SECONDS: '86400',
    };
    const clients = backend === 'postgres' ? [POOL_SIZE, REST_CONNECTIONS] : [1];
    const loadedSeconds = WARMUP_SECONDS + schedule.rounds * schedule.windowSeconds + 2;
    progress(`${backend}: seeding worlds, discovery rows, visit buckets and joiners with SQL...`);
    const seed = await seedDiscovery(
      env,
      prefix,
      JOINS_PER_SECOND.service * loadedSeconds,
      JOINS_PER_SECOND.ceiling * loadedSeconds * clients.length * 2,
    );
    progress(
      `${backend}: "${seed.word}" is in ${seed.wordMatches} public worlds, ${seed.tag} on ${seed.tagMatches}`,
    );
    let a: Atrium | undefined;
    let issuer: TokenIssuer | undefined;
    try {
      const copy = join(dataDir, 'ceiling-pgdata');
      if (backend === 'embedded') await cp(join(dataDir, 'pgdata'), copy, { recursive: true });
      const pgbench = pgbenchCeilings(clients, env.DATABASE_URL, copy);
      const throughPg = pgbenchCeilings(clients, env.DATABASE_URL, copy, '`pg`');
      a = await startAtrium(env, nodeArgs);
      issuer = await tokenIssuer(dataDir);
      const [token] = await issuer.issueFor([seed.idOf(1)]);
      const database = backend === 'postgres' ? await postgresVersion(env.DATABASE_URL as string) : 'PGlite';

      const results: SearchResults[] = [];
      for (const search of searches(seed)) {
        progress(
          `${backend}: ${search.name}, one client, then in rounds beside the SQL through \`pg\` and pgbench...`,
        );
        await checkSearch(a.httpPort, token as string, search);
        const alone = await searchLatency(a.httpPort, token as string, search, seconds / 2);
        const compared = await compare(
          `${backend}, ${search.name}`,
          searchRequests(a, token as string, search),
          [
            ...(await throughPg(search.script, search.variables)),
            ...(await pgbench(search.script, search.variables)),
          ],
          schedule,
        );
        results.push({ search, alone, compared });
      }

      progress(`${backend}: joins of one hot world beside pgbench with and without the visit...`);
      const joiners = Array.from({ length: seed.serviceJoiners }, (_, i) => seed.idOf(seed.firstJoiner + i));
      const joinerTokens = await issuer.issueFor(joiners);
      const named = (suffix: string) => (ceilings: Awaited<ReturnType<typeof pgbench>>) =>
        ceilings.map((c) => ({ ...c, name: `${c.name}, ${suffix}` }));
      const joins = await compare(
        `${backend}, joins`,
        joinRequests(a, seed.hot.world, joinerTokens),
        [
          ...named('with the visit')(
            await pgbench(joinScript(prefix, true), joinVariables(seed.ceilingWith)),
          ),
          ...named('without it')(
            await pgbench(joinScript(prefix, false), joinVariables(seed.ceilingWithout)),
          ),
        ],
        schedule,
      );
      const slowest = results.reduce((x, y) => (y.alone.p99 > x.alone.p99 ? y : x)).search;
      const plans = env.DATABASE_URL ? await plansOf(env.DATABASE_URL, slowest, seed) : undefined;
      return {
        database,
        pgbenchClients: clients,
        seed,
        searches: results,
        joins,
        ...(plans ? { plans } : {}),
      };
    } finally {
      await issuer?.close();
      if (a) await stopAtrium(a);
    }
  });
}
