import type { EconomyBalanceEvent, EntryKind } from '../../../protocol/economy.js';
import type { EventBus } from '../../platform/bus.js';
import { userTopic } from '../../platform/bus.js';
import type { DataAccess } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { newId } from '../../platform/ids.js';
import type { LogSink } from '../../platform/log.js';
import { type EntryRow, postTransaction } from './ledger.repository.js';
import { insufficientFunds } from './views.js';

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

/** Tells each owner of a moved user account its new balance, once the transaction committed. */
export function announceBalances(
  bus: EventBus,
  log: LogSink,
  entries: readonly EntryRow[],
): Promise<unknown> {
  return Promise.all(
    entries
      .filter((entry) => entry.user_id !== null)
      .map((entry) => {
        const d: EconomyBalanceEvent = {
          account: entry.account,
          balance: Number(entry.balance_after),
          transaction_id: entry.transaction_id,
        };
        return bus.publishCommitted(userTopic(entry.user_id as string), { t: 'economy.balance', d }, log);
      }),
  );
}
