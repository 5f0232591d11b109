import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import { readTransactions, transactionKey } from './ledger-rows.js';
import type { Model } from './model.js';

/** Rows read from the database against the model's: the comparisons the per-step and full checks share. */

export function compareSets(
  what: string,
  found: Set<string>,
  expected: Set<string>,
  problems: string[],
): void {
  const extra = [...found].filter((id) => !expected.has(id));
  const missing = [...expected].filter((id) => !found.has(id));
  if (extra.length) problems.push(`${what} rows no acknowledged write made: ${extra.join(', ')}`);
  if (missing.length) problems.push(`acknowledged ${what} rows missing: ${missing.join(', ')}`);
}

export function checkListings(
  m: Model,
  rows: { id: string; state: string; sold_count: number; quantity: number | null }[],
  problems: string[],
): void {
  const byId = new Map(m.listings.map((l) => [l.id, l]));
  for (const row of rows) {
    const l = byId.get(row.id);
    if (row.quantity !== null && row.sold_count > row.quantity)
      problems.push(`listing ${row.id} oversold: ${row.sold_count} of ${row.quantity}`);
    if ((row.state === 'sold') !== (row.quantity !== null && row.sold_count === row.quantity)) {
      problems.push(`listing ${row.id} is ${row.state} with ${row.sold_count} of ${row.quantity} sold`);
    }
    if (!l || l.state !== row.state || l.soldCount !== row.sold_count) {
      problems.push(
        `listing ${row.id} is ${row.state} with ${row.sold_count} sold, expected ${l?.state} with ${l?.soldCount}`,
      );
    }
  }
}

export function checkPurchases(
  m: Model,
  rows: { id: string; state: string; refund_transaction_id: string | null; released: boolean }[],
  problems: string[],
): void {
  const byId = new Map(m.purchases.map((p) => [p.id, p]));
  for (const row of rows) {
    const p = byId.get(row.id);
    const want = p && { state: p.state, refund: p.refundTransactionId, released: p.released };
    const got = { state: row.state, refund: row.refund_transaction_id, released: row.released };
    if (!isDeepStrictEqual(want, got))
      problems.push(`purchase ${row.id} is ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
  }
}

export function checkInventories(
  m: Model,
  userIds: string[],
  rows: { user_id: string; item_id: string; quantity: number }[],
  problems: string[],
): void {
  const found = new Map<string, Record<string, number>>(userIds.map((id) => [id, {}]));
  for (const row of rows) {
    const held = found.get(row.user_id);
    if (held) held[row.item_id] = row.quantity;
  }
  for (const [id, held] of found) {
    const user = m.user(m.userByUuid.get(id) as number);
    if (!isDeepStrictEqual(sorted(held), sorted(user.inventory))) {
      problems.push(
        `${user.username}'s inventory is ${JSON.stringify(sorted(held))}, purchases less refunds make ${JSON.stringify(sorted(user.inventory))}`,
      );
    }
  }
}

const sorted = (o: Record<string, number>) =>
  Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

export async function checkPayouts(
  client: pg.ClientBase,
  m: Model,
  ids: string[],
  problems: string[],
): Promise<void> {
  const { rows } = await client.query<{ id: string; state: string; amount: string }>(
    'select id, state::text as state, amount::text as amount from creator_payouts where id = any($1::uuid[])',
    [ids],
  );
  const byId = new Map(m.payouts.map((p) => [p.id, p]));
  for (const row of rows) {
    const p = byId.get(row.id);
    if (!p || p.state !== row.state || p.amount !== Number(row.amount)) {
      problems.push(
        `payout ${row.id} is ${row.state} of ${row.amount}, expected ${p?.state} of ${p?.amount}`,
      );
    }
  }
  const transactions = await readTransactions(client, m, 't.payout_id = any($1::uuid[])', ids);
  for (const id of ids) {
    const p = byId.get(id);
    const got = transactions
      .filter((t) => t.payoutId === id)
      .map((t) => transactionKey(t.entries))
      .sort();
    const want = (p?.moves ?? []).map(transactionKey).sort();
    if (!isDeepStrictEqual(got, want)) {
      problems.push(
        `payout ${id}'s ledger transactions are [${got.join(' | ')}], expected [${want.join(' | ')}]`,
      );
    }
  }
}
