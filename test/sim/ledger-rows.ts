import type pg from 'pg';
import type { ExpectedEntry, Model } from './model.js';

/**
 * Ledger rows as the checks compare them: an entry as `account:user:kind:amount` (the user as the
 * model's index, `-` for the platform), a transaction as its entries sorted, so two transactions
 * compare equal when they moved the same money the same way.
 */

export function entryKey(entry: ExpectedEntry): string {
  return `${entry.account}:${entry.user ?? '-'}:${entry.kind}:${entry.amount}`;
}

export function transactionKey(entries: readonly ExpectedEntry[]): string {
  return entries.map(entryKey).sort().join(' ');
}

export interface LedgerTransaction {
  id: string;
  kind: string;
  payoutId: string | null;
  entries: ExpectedEntry[];
  sum: number;
}

/** Transactions with their entries; `where` filters economy_transactions `t` with $1. */
export async function readTransactions(
  client: pg.ClientBase,
  model: Model,
  where: string,
  param: unknown,
): Promise<LedgerTransaction[]> {
  const { rows } = await client.query<{
    id: string;
    kind: string;
    payout_id: string | null;
    account: string | null;
    user_id: string | null;
    entry_kind: string | null;
    amount: string | null;
  }>(
    `select t.id, t.kind::text as kind, t.payout_id, a.kind::text as account, a.user_id,
            e.kind::text as entry_kind, e.amount::text as amount
     from economy_transactions t
     left join economy_entries e on e.transaction_id = t.id
     left join economy_accounts a on a.id = e.account_id
     where ${where}
     order by t.id`,
    [param],
  );
  const byId = new Map<string, LedgerTransaction>();
  for (const row of rows) {
    let tx = byId.get(row.id);
    if (!tx) {
      tx = { id: row.id, kind: row.kind, payoutId: row.payout_id, entries: [], sum: 0 };
      byId.set(row.id, tx);
    }
    if (row.amount === null) continue;
    const amount = Number(row.amount);
    tx.sum += amount;
    tx.entries.push({
      account: row.account as ExpectedEntry['account'],
      user: row.user_id === null ? null : (model.userByUuid.get(row.user_id) ?? -1),
      kind: row.entry_kind as ExpectedEntry['kind'],
      amount,
    });
  }
  return [...byId.values()];
}

/** The smallest UUID v7 minted at `ms` or later: ids at or above it were made since then. */
export function uuidV7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}
