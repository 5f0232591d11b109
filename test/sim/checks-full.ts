import type pg from 'pg';
import { checkInventories, checkListings, checkPayouts, checkPurchases } from './compare.js';
import type { Model } from './model.js';

/**
 * The whole-database comparisons, run every few hundred steps and at the end (each reads every
 * row of its table, too slow for every step): every transaction sums to zero, every stored balance
 * is its entries' sum, and every item, listing, purchase, payout (with its transactions),
 * inventory row, transaction count and stored idempotency key is what the model holds.
 */
export async function fullChecks(client: pg.ClientBase, m: Model, problems: string[]): Promise<void> {
  const unbalanced = await client.query<{ transaction_id: string; sum: string }>(
    `select transaction_id, sum(amount)::text as sum from economy_entries
     group by transaction_id having sum(amount) <> 0`,
  );
  for (const row of unbalanced.rows) problems.push(`transaction ${row.transaction_id} sums to ${row.sum}`);
  const drifted = await client.query<{ id: string; balance: string; entries: string }>(
    `select a.id, a.balance::text as balance, coalesce(e.total, 0)::text as entries
     from economy_accounts a
     left join (select account_id, sum(amount) as total from economy_entries group by account_id) e on e.account_id = a.id
     where a.balance <> coalesce(e.total, 0)`,
  );
  for (const row of drifted.rows)
    problems.push(`account ${row.id} stores ${row.balance}, its entries sum to ${row.entries}`);

  const counts = await client.query<Record<string, string>>(
    `select (select count(*) from catalog_items)::text as items,
            (select count(*) from marketplace_listings)::text as listings,
            (select count(*) from purchases)::text as purchases,
            (select count(*) from creator_payouts)::text as payouts,
            (select count(*) from economy_idempotency_keys)::text as keys`,
  );
  const count = counts.rows[0] as Record<string, string>;
  const expected: Record<string, number> = {
    items: m.items.filter((i) => i.id).length,
    listings: m.listings.filter((l) => l.id).length,
    purchases: m.purchases.filter((p) => p.id).length,
    payouts: m.payouts.filter((p) => p.id).length,
    keys: m.keys.size,
  };
  for (const [what, n] of Object.entries(expected)) {
    if (Number(count[what]) !== n) problems.push(`${count[what]} ${what} in the database, ${n} acknowledged`);
  }
  const kinds = await client.query<{ kind: string; n: string }>(
    'select kind::text as kind, count(*)::text as n from economy_transactions group by kind',
  );
  const byKind = Object.fromEntries(kinds.rows.map((r) => [r.kind, Number(r.n)]));
  for (const kind of new Set([...Object.keys(byKind), ...Object.keys(m.transactionsByKind)])) {
    if ((byKind[kind] ?? 0) !== (m.transactionsByKind[kind] ?? 0)) {
      problems.push(
        `${byKind[kind] ?? 0} ${kind} transactions in the ledger, ${m.transactionsByKind[kind] ?? 0} acknowledged`,
      );
    }
  }

  const items = await client.query<{ id: string; state: string }>(
    'select id, state::text as state from catalog_items',
  );
  const itemState = new Map(m.items.map((i) => [i.id, i.state]));
  for (const row of items.rows) {
    if (itemState.get(row.id) !== row.state)
      problems.push(`item ${row.id} is ${row.state}, expected ${itemState.get(row.id)}`);
  }
  const listings = await client.query<{
    id: string;
    state: string;
    sold_count: number;
    quantity: number | null;
  }>('select id, state::text as state, sold_count, quantity from marketplace_listings');
  checkListings(m, listings.rows, problems);
  const purchases = await client.query<{
    id: string;
    state: string;
    refund_transaction_id: string | null;
    released: boolean;
  }>(
    'select id, state::text as state, refund_transaction_id, released_at is not null as released from purchases',
  );
  checkPurchases(m, purchases.rows, problems);
  const inventory = await client.query<{ user_id: string; item_id: string; quantity: number }>(
    'select user_id, item_id, quantity from inventory_items',
  );
  checkInventories(
    m,
    m.users.map((u) => u.id),
    inventory.rows,
    problems,
  );
  const payoutIds = m.payouts.map((p) => p.id).filter((id): id is string => id !== null);
  await checkPayouts(client, m, payoutIds, problems);
}
