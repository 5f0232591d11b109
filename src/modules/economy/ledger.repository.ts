import type { AccountKind, EntryKind } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, hasSqlState, SqlState } from '../../platform/db.js';
import { newId } from '../../platform/ids.js';
import { namedSql } from '../../platform/named-sql.js';
import { type AccountRef, insufficientFunds, PLATFORM_ACCOUNT_IDS } from './accounts.js';

/**
 * The ledger: its accounts, transactions and their entries (migrations 0013 and 0014), and `post`,
 * the one way a transaction is appended.
 */

export interface Posting {
  entryId: string;
  accountId: string;
  kind: EntryKind;
  /** Signed minor units; never 0 (a posting of nothing is left out by the caller). */
  amount: number;
}

export interface NewTransaction {
  id: string;
  kind: EntryKind;
  purchaseId: string | null;
  payoutId: string | null;
  actorId: string | null;
  reason: string | null;
  at: Date;
  postings: readonly Posting[];
}

/** An entry with its account's kind and owner; amounts as the driver gives bigints (text). */
export interface EntryRow {
  id: string;
  transaction_id: string;
  account_id: string;
  account: AccountKind;
  user_id: string | null;
  kind: EntryKind;
  amount: string;
  balance_after: string;
  created_at: Date;
  created_key: string;
}

const ENTRY_COLUMNS = `e.id, e.transaction_id, e.account_id, a.kind::text as account, a.user_id, e.kind::text as kind,
  e.amount::text as amount, e.balance_after::text as balance_after, e.created_at,
  ${timeKeySql('e.created_at')} as created_key`;

/** Creates the accounts that do not exist yet (balance 0); existing ones are left as they are. */
export async function ensureAccounts(
  data: DataAccess,
  accounts: readonly AccountRef[],
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `insert into economy_accounts (id, user_id, kind, created_at)
     select id, user_id, kind::ledger_account, $4 from unnest($1::uuid[], $2::uuid[], $3::text[]) as a(id, user_id, kind)
     on conflict (id) do nothing`,
    [accounts.map((a) => a.id), accounts.map((a) => a.userId), accounts.map((a) => a.kind), at],
  );
}

/**
 * Locks the user accounts a transaction will move, in id order, so that two transactions never
 * wait for each other in a cycle, and gives their balances (an account that does not exist is
 * absent). Platform accounts are left to the posting statement, which locks them last: each
 * transaction moves at most one, and they are the rows every purchase (or grant) waits for, so
 * they are held for the shortest time.
 */
export async function lockAccounts(data: DataAccess, ids: readonly string[]): Promise<Map<string, number>> {
  const rows = await executeBound<{ id: string; balance: string }>(
    data,
    'select id, balance::text as balance from economy_accounts where id = any($1::uuid[]) order by id for update',
    [ids.filter((id) => !PLATFORM_IDS.has(id))],
  );
  return new Map(rows.map((row) => [row.id, Number(row.balance)]));
}

const PLATFORM_IDS: ReadonlySet<string> = new Set(Object.values(PLATFORM_ACCOUNT_IDS));

type PostingParams = Omit<NewTransaction, 'postings'> & {
  entryIds: string[];
  accountIds: string[];
  kinds: EntryKind[];
  amounts: number[];
};

// The answer comes from the accounts' update, which returns each movement with its account's new
// balance: joining the entries back to the accounts and the movements cost three hash joins, built
// for three rows, about a third of the statement's execution in Postgres.
const POST_TRANSACTION = namedSql<PostingParams>(
  `with tx as (
     insert into economy_transactions (id, kind, purchase_id, payout_id, actor_id, reason, created_at)
     values (:id, :kind::ledger_entry_kind, :purchaseId, :payoutId, :actorId, :reason, :at) returning id
   ), moves as (
     select * from unnest(:entryIds::uuid[], :accountIds::uuid[], :kinds::text[], :amounts::bigint[]) with ordinality
       as m(entry_id, account_id, kind, amount, n)
   ), moved as (
     update economy_accounts a set balance = a.balance + m.amount, updated_at = :at
     from moves m where a.id = m.account_id
     returning m.entry_id, m.n, m.kind as entry_kind, m.amount, a.id, a.kind, a.user_id, a.balance
   ), e as (
     insert into economy_entries (id, transaction_id, account_id, kind, amount, balance_after, created_at)
     select entry_id, (select id from tx), id, entry_kind::ledger_entry_kind, amount, balance, :at from moved
   )
   select m.entry_id as id, (select id from tx) as transaction_id, m.id as account_id, m.kind::text as account,
     m.user_id, m.entry_kind as kind, m.amount::text as amount, m.balance::text as balance_after,
     :at::timestamptz as created_at, ${timeKeySql(':at::timestamptz')} as created_key
   from moved m
   order by m.n`,
);

/**
 * Appends one transaction: its row, each account's new balance and the entries with the balance
 * they left, in one statement. The accounts must be locked (lockAccounts) and exist. A user
 * account taken below zero fails the statement (the check of migration 0013), and entries that do
 * not sum to zero fail the commit (0014's deferred trigger).
 */
function postTransaction(data: DataAccess, tx: NewTransaction): Promise<EntryRow[]> {
  const { postings, ...row } = tx;
  return executeNamed<EntryRow, PostingParams>(data, POST_TRANSACTION, {
    ...row,
    entryIds: postings.map((p) => p.entryId),
    accountIds: postings.map((p) => p.accountId),
    kinds: postings.map((p) => p.kind),
    amounts: postings.map((p) => p.amount),
  });
}

/** A page of the entries of some accounts, newest first, after a (time, id) key. */
export async function entriesOf(
  data: DataAccess,
  accountIds: readonly string[],
  after: [string | null, string | null],
  limit: number,
): Promise<EntryRow[]> {
  return executeBound<EntryRow>(
    data,
    `select ${ENTRY_COLUMNS}
     from economy_entries e join economy_accounts a on a.id = e.account_id
     where e.account_id = any($1::uuid[]) and ${beforeTimeIdKey('e.created_at', 'e.id')}
     order by e.created_at desc, e.id desc limit $4`,
    [accountIds, after[0], after[1], limit],
  );
}

export interface TransactionRow {
  id: string;
  kind: EntryKind;
  purchase_id: string | null;
  payout_id: string | null;
  created_at: Date;
}

export async function transactionById(
  data: DataAccess,
  id: string,
): Promise<{ tx: TransactionRow; entries: EntryRow[] } | undefined> {
  const [tx] = await executeBound<TransactionRow>(
    data,
    'select id, kind::text as kind, purchase_id, payout_id, created_at from economy_transactions where id = $1',
    [id],
  );
  if (!tx) return undefined;
  const entries = await executeBound<EntryRow>(
    data,
    `select ${ENTRY_COLUMNS}
     from economy_entries e join economy_accounts a on a.id = e.account_id
     where e.transaction_id = $1 order by e.id`,
    [id],
  );
  return { tx, entries };
}

/** The balances and last movement of some accounts (absent when never created). */
export async function accountsById(
  data: DataAccess,
  ids: readonly string[],
): Promise<Map<string, { balance: number; updatedAt: Date | null }>> {
  const rows = await executeBound<{ id: string; balance: string; updated_at: Date | null }>(
    data,
    'select id, balance::text as balance, updated_at from economy_accounts where id = any($1::uuid[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, { balance: Number(r.balance), updatedAt: r.updated_at }]));
}

/** One line of a transaction: an account moved by a signed amount. */
export interface Movement {
  accountId: string;
  kind: EntryKind;
  amount: number;
}

export interface Posted {
  transactionId: string;
  entries: EntryRow[];
}

/**
 * Appends a transaction of these movements (each account at most once, already locked with
 * lockAccounts). Movements of 0 are left out: an entry always moves money. A user account that
 * would go below zero is refused by the database; that reaches the caller as INSUFFICIENT_FUNDS.
 */
export async function post(
  data: DataAccess,
  tx: {
    kind: EntryKind;
    purchaseId?: string;
    payoutId?: string;
    actorId?: string;
    reason?: string;
    at: Date;
  },
  movements: readonly Movement[],
  transactionId = newId(),
): Promise<Posted> {
  const postings = movements
    .filter((m) => m.amount !== 0)
    .map((m) => ({ entryId: newId(), accountId: m.accountId, kind: m.kind, amount: m.amount }));
  try {
    const entries = await postTransaction(data, {
      id: transactionId,
      kind: tx.kind,
      purchaseId: tx.purchaseId ?? null,
      payoutId: tx.payoutId ?? null,
      actorId: tx.actorId ?? null,
      reason: tx.reason ?? null,
      at: tx.at,
      postings,
    });
    return { transactionId, entries };
  } catch (error) {
    // The services check balances under the accounts' locks first; this is the database's last word.
    if (hasSqlState(error, SqlState.CHECK_VIOLATION)) {
      const short = postings.find((p) => p.amount < 0);
      throw insufficientFunds(0, short ? -short.amount : 0);
    }
    throw error;
  }
}
