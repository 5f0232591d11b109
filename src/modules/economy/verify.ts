import { type DataAccess, IsolationLevel, transaction } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/**
 * What `atrium economy verify` reports: an account whose stored balance is not the sum of its
 * entries, a transaction whose entries do not sum to zero, or an entry whose balance_after is not
 * the running sum of its account's entries up to it.
 */
export type LedgerDifference =
  | {
      kind: 'balance';
      account_id: string;
      account: string;
      user_id: string | null;
      stored: number;
      entries: number;
    }
  | { kind: 'unbalanced_transaction'; transaction_id: string; sum: number }
  | { kind: 'balance_after'; entry_id: string; account_id: string; stored: number; running: number };

/**
 * Recomputes every balance from the ledger, in one snapshot (a repeatable-read transaction), so a
 * verify running beside live traffic compares balances and entries of the same instant.
 */
export async function verifyLedger(data: DataAccess): Promise<LedgerDifference[]> {
  return transaction(
    data,
    async (tx) => {
      const balances = await executeBound<{
        id: string;
        kind: string;
        user_id: string | null;
        stored: string;
        entries: string;
      }>(
        tx,
        `select a.id, a.kind::text as kind, a.user_id, a.balance::text as stored, coalesce(s.total, 0)::text as entries
         from economy_accounts a
         left join (select account_id, sum(amount) as total from economy_entries group by account_id) s on s.account_id = a.id
         where a.balance <> coalesce(s.total, 0)
         order by a.id`,
        [],
      );
      const unbalanced = await executeBound<{ transaction_id: string; total: string }>(
        tx,
        `select transaction_id, sum(amount)::text as total from economy_entries
         group by transaction_id having sum(amount) <> 0 order by transaction_id`,
        [],
      );
      const running = await executeBound<{ id: string; account_id: string; stored: string; running: string }>(
        tx,
        `select id, account_id, balance_after::text as stored, running::text as running from (
           select id, account_id, balance_after,
             sum(amount) over (partition by account_id order by seq) as running
           from economy_entries) e
         where balance_after <> running order by account_id, id`,
        [],
      );
      return [
        ...balances.map(
          (row): LedgerDifference => ({
            kind: 'balance',
            account_id: row.id,
            account: row.kind,
            user_id: row.user_id,
            stored: Number(row.stored),
            entries: Number(row.entries),
          }),
        ),
        ...unbalanced.map(
          (row): LedgerDifference => ({
            kind: 'unbalanced_transaction',
            transaction_id: row.transaction_id,
            sum: Number(row.total),
          }),
        ),
        ...running.map(
          (row): LedgerDifference => ({
            kind: 'balance_after',
            entry_id: row.id,
            account_id: row.account_id,
            stored: Number(row.stored),
            running: Number(row.running),
          }),
        ),
      ];
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
  );
}
