import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { startAtrium } from '../realtime/servers.js';
import { postgresSql } from '../worlds/harness.js';
import { type Market, progress, verify } from './shared.js';

/**
 * A purchase load cut by SIGKILL: the buyers send purchases for `seconds`, the service is killed
 * halfway, and then every purchase a buyer saw acknowledged (201) must be in the ledger with its
 * transaction, and `economy verify` must find no difference (no half-applied purchase).
 */

export interface CrashResults {
  acknowledged: number;
  /** Acknowledged purchases found with their transaction. */
  found: number;
  /** Purchases in the database made during the run (acknowledged or cut before the answer). */
  stored: number;
  failedRequests: number;
  verified: { clean: boolean; output: string };
}

export async function measureCrash(
  env: Record<string, string>,
  market: Market,
  seconds: number,
): Promise<CrashResults> {
  const atrium = await startAtrium(env);
  const base = `http://127.0.0.1:${atrium.httpPort}`;
  const acknowledged: string[] = [];
  let failedRequests = 0;
  let stopping = false;
  const buyer = async (index: number) => {
    const { token } = market.buyers[index] as Market['buyers'][number];
    while (!stopping) {
      const listing = market.listings[Math.floor(Math.random() * market.listings.length)];
      try {
        const response = await fetch(`${base}/api/economy/purchases`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'idempotency-key': randomUUID(),
          },
          body: JSON.stringify({ listing_id: listing }),
        });
        if (response.status === 201) acknowledged.push(((await response.json()) as { id: string }).id);
        else failedRequests++;
      } catch {
        failedRequests++;
      }
    }
  };
  const started = new Date();
  const load = Promise.all(market.buyers.map((_, i) => buyer(i)));
  await new Promise((resolve) => setTimeout(resolve, (seconds / 2) * 1000));
  const exited = once(atrium.child, 'exit');
  atrium.child.kill('SIGKILL');
  await exited;
  stopping = true;
  await load;
  progress(`killed after ${acknowledged.length} acknowledged purchases; checking the ledger...`);
  const sql = await postgresSql(env.DATABASE_URL as string);
  try {
    const [found] = await sql.query<{ n: number }>(
      `select count(*)::int as n from purchases p join economy_transactions t on t.id = p.transaction_id
       where p.id = any($1::uuid[])`,
      [acknowledged],
    );
    const [stored] = await sql.query<{ n: number }>(
      'select count(*)::int as n from purchases where created_at >= $1',
      [started],
    );
    return {
      acknowledged: acknowledged.length,
      found: found?.n ?? 0,
      stored: stored?.n ?? 0,
      failedRequests,
      verified: await verify(env),
    };
  } finally {
    await sql.close();
  }
}
