import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { configFrom } from '../../src/config.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { CHAT_ENV } from '../chat/measure.js';
import { seedUsers } from '../datapath/seed.js';
import { openMarket } from '../economy/measure.js';
import { SERVICE_ENV, stopAtrium } from '../realtime/servers.js';
import { tokenIssuer } from '../realtime/tokens.js';
import { echoWarnings, serviceNodeArgs, startService } from '../service.js';
import { settledTreeRssKiB } from './memory.js';
import { CLIQUE, type Population, USERS } from './population.js';
import { progress } from './progress.js';

/**
 * Atrium for the peers bench, in production mode: the compiled build (`npm run build`, run by the
 * bench) started with npm start's V8 flags, on its own PostgreSQL database and Redis database
 * number, seeded in SQL (users, a clique of friends, a group) and through its API (the market).
 */

/** Rate limits lifted as the other benches lift them: the rows measure the work, not the limiter. */
const PEERS_ENV = {
  ...SERVICE_ENV,
  ...CHAT_ENV,
  GROUP_MAX_MEMBERS: '100000',
  SOCIAL_RATE_LIMIT_COUNT: '100000',
  ECONOMY_CREATE_RATE_LIMIT_COUNT: '100000',
  ECONOMY_PURCHASE_RATE_LIMIT_COUNT: '100000',
  ECONOMY_FEE_BPS: '3000',
  EXTENSIONS: resolve('bench/peers/echo.mjs'),
};

export interface RunningAtrium {
  pid: number;
  http: string;
  ws: string;
  population: Population;
  /** RSS once started, before any request. */
  restKiB: number;
  stop(): Promise<void>;
}

/**
 * Starts and seeds one Atrium: `workers` is WORKERS, `redisDb` keeps its keys apart from the other
 * Atrium's, `profileDir` (optional) receives a CPU profile of each of its processes.
 */
export async function startSeededAtrium(
  database: string,
  redisDb: number,
  workers: number,
  connectSockets: number,
  profileDir?: string,
): Promise<RunningAtrium> {
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-peers-'));
  const env: Record<string, string> = {
    ...PEERS_ENV,
    DATA_DIR: dataDir,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    REDIS_URL: `redis://127.0.0.1:6379/${redisDb}`,
    WORKERS: String(workers),
  };
  const ids = await seedUsers(env, USERS);
  const groupId = await seedSocial(env, ids, CLIQUE);
  const service = await startService(env, (await serviceNodeArgs(profileDir, true)) as string[]);
  // Its warnings, errors and an unexpected exit are worth seeing.
  echoWarnings(service);
  service.child.once('exit', (code, signal) =>
    progress(`atrium WORKERS=${workers} exited (${code ?? signal})`),
  );
  try {
    const restKiB = await settledTreeRssKiB(service.child.pid as number);
    // A day, as Nakama's sessions here: the connect rounds before the rows can outlast 15 minutes.
    const issuer = await tokenIssuer(dataDir, 86_400);
    const tokens = await issuer.issueFor(ids);
    const connectTokens = await issuer.issue(connectSockets, `atrium WORKERS=${workers}, connect`);
    const market = await openMarket(service, ids, issuer);
    await issuer.close();
    return {
      pid: service.child.pid as number,
      http: `http://127.0.0.1:${service.httpPort}`,
      ws: `ws://127.0.0.1:${service.wsPort}/ws`,
      population: {
        users: ids.map((id, i) => ({ id, token: tokens[i] as string })),
        groupId,
        purchases: market.listings.flatMap((listing_id) =>
          market.buyers.map((buyer) => ({ token: buyer.token, body: { listing_id } })),
        ),
        connectTokens,
      },
      restKiB,
      async stop() {
        await stopAtrium(service);
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopAtrium(service);
    throw error;
  }
}

/** Friendships among the first `clique` users, every one with every other, and a group of all users (user 0 its owner). */
async function seedSocial(
  env: Record<string, string>,
  ids: readonly string[],
  clique: number,
): Promise<string> {
  const db = await openDatabase(configFrom(env));
  const groupId = newId();
  const owner = ids[0] as string;
  try {
    const sql = (text: string, params: unknown[]) => executeBound(db.data, text, params);
    await sql(
      `insert into friendships (requester_id, addressee_id, status, created_at, responded_at)
       select a, b, 'accepted', now(), now() from unnest($1::uuid[]) a, unnest($1::uuid[]) b where a < b`,
      [`{${ids.slice(0, clique).join(',')}}`],
    );
    await sql(`insert into groups (id, name, join_policy, owner_id) values ($1, 'bench peers', 'open', $2)`, [
      groupId,
      owner,
    ]);
    await sql(
      `insert into group_members (group_id, user_id, role, joined_at)
       select $1, u, case when u = $2::uuid then 'owner' else 'member' end::group_role, now() + n * interval '1 millisecond'
       from unnest($3::uuid[]) with ordinality as t(u, n)`,
      [groupId, owner, `{${ids.join(',')}}`],
    );
    await sql('analyze', []);
    return groupId;
  } finally {
    await db.close();
  }
}
