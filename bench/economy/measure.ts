import { randomBytes, randomUUID } from 'node:crypto';
import { userAccountId, userAccountIdSql } from '../../src/modules/economy/accounts.js';
import { userIdOf } from '../chat/ceiling.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { type PgbenchWindow, pgbenchContender, pgbenchTargetOf } from '../datapath/pgbench.js';
import { seedUsers } from '../datapath/seed.js';
import { type RestWindow, restContender } from '../realtime/rest-load.js';
import { type ContenderRounds, interleavedRounds, type RoundSchedule } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { tokenIssuer } from '../realtime/tokens.js';
import { postgresSql, WORLDS_ENV } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { ANSWER, purchaseScript } from './ceiling.js';
import { type CrashResults, measureCrash } from './crash.js';
import { type Market, progress, verify } from './shared.js';

/**
 * Purchases per second on Postgres + Redis: 50 REST buyers beside pgbench running the purchase's
 * statements with the service's pool size, in interleaved rounds; `economy verify` after the
 * rounds; then a run killed with SIGKILL in its middle (crash.ts).
 */

export const BUYERS = 50;
export const SELLERS = 10;
export const PRICE = 100;
export const FEE_BPS = 3000;

export interface EconomyResults {
  database: string;
  rest: ContenderRounds<RestWindow>;
  ceiling: ContenderRounds<PgbenchWindow>;
  /** Lines `economy verify` printed after the rounds (one per difference, or its clean line). */
  verifiedAfterRounds: { clean: boolean; output: string };
  crash: CrashResults;
}

export function measureEconomy(
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<EconomyResults> {
  return withBackend('postgres', async (baseEnv, dataDir) => {
    const prefix = randomBytes(4).toString('hex');
    const ids = await seedUsers(baseEnv, BUYERS + SELLERS, userIdOf(prefix));
    const env: Record<string, string> = {
      ...baseEnv,
      ...WORLDS_ENV,
      DATABASE_POOL_SIZE: String(POOL_SIZE),
      ECONOMY_FEE_BPS: String(FEE_BPS),
      ECONOMY_CREATE_RATE_LIMIT_COUNT: '100000',
      // The bench measures how fast purchases go, not the per-buyer rate that bounds them.
      ECONOMY_PURCHASE_RATE_LIMIT_COUNT: '100000',
    };
    const issuer = await tokenIssuer(dataDir);
    let atrium: Atrium | undefined = await startAtrium(env, nodeArgs);
    try {
      const sql = await postgresSql(env.DATABASE_URL as string);
      const [version] = await sql.query<{ version: string }>('select version()');
      // The pgbench script names accounts with SQL; it must name the ones the service does.
      const [derived] = await sql.query<{ id: string }>(
        `select ${userAccountIdSql('$1::uuid', 'wallet')} as id`,
        [ids[0]],
      );
      if (derived?.id !== userAccountId(ids[0] as string, 'wallet'))
        throw new Error('userAccountIdSql differs from userAccountId');
      await sql.close();
      const market = await openMarket(atrium, ids, issuer);
      progress(`postgres: purchases, ${BUYERS} REST buyers and pgbench -c ${POOL_SIZE}, in rounds...`);
      const rest = purchases(atrium, market);
      const ceiling = await pgbenchContender(
        `pgbench -c ${POOL_SIZE}`,
        pgbenchTargetOf(env.DATABASE_URL as string),
        purchaseScript(BUYERS, SELLERS, prefix, FEE_BPS),
        { answer: ANSWER },
        POOL_SIZE,
      );
      let rounds: ContenderRounds<RestWindow | PgbenchWindow>[];
      try {
        rounds = await interleavedRounds<RestWindow | PgbenchWindow>(
          'postgres, purchases',
          [rest, ceiling],
          schedule,
        );
      } finally {
        await ceiling.close();
      }
      await stopAtrium(atrium);
      atrium = undefined;
      const verifiedAfterRounds = await verify(env);
      progress(`postgres: a purchase load killed with SIGKILL after ${seconds / 2} s...`);
      const crash = await measureCrash(env, market, seconds);
      return {
        database: version?.version.split(' on ')[0] ?? 'Postgres',
        rest: rounds[0] as ContenderRounds<RestWindow>,
        ceiling: rounds[1] as ContenderRounds<PgbenchWindow>,
        verifiedAfterRounds,
        crash,
      };
    } finally {
      await issuer.close();
      if (atrium) await stopAtrium(atrium);
    }
  });
}

/** Wallets for the buyers (admin grants) and one consumable listing per seller, through the API. */
export async function openMarket(
  atrium: Pick<Atrium, 'httpPort'>,
  ids: readonly string[],
  issuer: Awaited<ReturnType<typeof tokenIssuer>>,
): Promise<Market> {
  const base = `http://127.0.0.1:${atrium.httpPort}`;
  const tokens = await issuer.issueFor(ids);
  const [admin] = await issuer.issueFor([ids[0] as string], ['user', 'admin']);
  const send = async (token: string, method: string, path: string, body: object) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify(body),
    });
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string };
  };
  const buyers = ids.slice(0, BUYERS).map((id, i) => ({ id, token: tokens[i] as string }));
  for (const buyer of buyers) {
    await send(admin as string, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.id,
      amount: 1_000_000_000_000,
      reason: 'bench',
    });
  }
  const listings: string[] = [];
  for (let i = BUYERS; i < BUYERS + SELLERS; i++) {
    const token = tokens[i] as string;
    const item = await send(token, 'POST', '/api/economy/items', {
      name: `Item ${i}`,
      asset_type: 'emote',
      consumable: true,
    });
    await send(token, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    listings.push(
      (await send(token, 'POST', '/api/economy/listings', { item_id: item.id, price: PRICE })).id,
    );
  }
  return { buyers, listings };
}

/** POST /api/economy/purchases from a random buyer on a random listing, each with a fresh key. */
function purchases(atrium: Atrium, market: Market) {
  const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)] as T;
  return restContender(
    'POST purchases',
    `http://127.0.0.1:${atrium.httpPort}/api/economy/purchases`,
    atrium.pid,
    {},
    {
      body: JSON.stringify({ listing_id: market.listings[0] }),
      setup: (sent) => ({
        ...sent,
        body: JSON.stringify({ listing_id: pick(market.listings) }),
        headers: {
          ...sent.headers,
          authorization: `Bearer ${pick(market.buyers).token}`,
          'idempotency-key': randomUUID(),
        },
      }),
    },
  );
}
