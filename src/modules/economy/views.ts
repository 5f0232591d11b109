import {
  CURRENCY,
  type EconomyBalanceEvent,
  type Entry,
  type Item,
  type Listing,
  type Payout,
  type Purchase,
  type TransactionEntry,
} from '../../../protocol/economy.js';
import { type Announcement, userTopic } from '../../platform/bus.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId } from '../../platform/ids.js';
import type { ItemRow, ListingRow } from './catalog.repository.js';
import type { EntryRow } from './ledger.repository.js';
import type { PayoutRow } from './payouts.repository.js';
import type { PurchaseRow } from './purchases.repository.js';

/** Rows as the API shows them, and the small checks every economy service shares. */

const iso = (date: Date) => new Date(date).toISOString();
const isoOrNull = (date: Date | null) => (date === null ? null : iso(date));

export const toEntry = (row: EntryRow): Entry => ({
  id: row.id,
  transaction_id: row.transaction_id,
  account: row.account,
  user_id: row.user_id,
  kind: row.kind,
  amount: Number(row.amount),
  balance_after: Number(row.balance_after),
  currency: CURRENCY,
  created_at: iso(row.created_at),
});

/** Another party's entry as a non-admin reader of its transaction sees it: whose, and their balance, withheld. */
export const toOthersEntry = (row: EntryRow): TransactionEntry => ({
  ...toEntry(row),
  user_id: null,
  balance_after: null,
});

export const toItem = (row: ItemRow): Item => ({
  id: row.id,
  creator_id: row.creator_id,
  name: row.name,
  description: row.description,
  asset_type: row.asset_type,
  asset_id: row.asset_id,
  consumable: row.consumable,
  state: row.state,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  published_at: isoOrNull(row.published_at),
});

export const toListing = (row: ListingRow): Listing => ({
  id: row.id,
  item_id: row.item_id,
  seller_id: row.seller_id,
  price: Number(row.price),
  currency: CURRENCY,
  quantity: row.quantity,
  sold_count: row.sold_count,
  state: row.state,
  created_at: iso(row.created_at),
});

export const toPurchase = (row: PurchaseRow): Purchase => ({
  id: row.id,
  listing_id: row.listing_id,
  item_id: row.item_id,
  buyer_id: row.buyer_id,
  seller_id: row.seller_id,
  price: Number(row.price),
  fee: Number(row.fee),
  seller_amount: Number(row.seller_amount),
  currency: CURRENCY,
  state: row.state,
  hold_until: iso(row.hold_until),
  transaction_id: row.transaction_id,
  refund_transaction_id: row.refund_transaction_id,
  created_at: iso(row.created_at),
});

export const toPayout = (row: PayoutRow): Payout => ({
  id: row.id,
  user_id: row.user_id,
  amount: Number(row.amount),
  currency: CURRENCY,
  state: row.state,
  note: row.note,
  decided_by: row.decided_by,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
});

/** An optional filter id (its schema checked the form) in its one spelling, or null. */
export function filterId(value: string | undefined): string | null {
  return value === undefined ? null : canonicalId(value);
}

export const conflictIn = (message: string, currentState: string) =>
  new AppError(ErrorCode.CONFLICT, message, { details: { current_state: currentState } });

/** Each owner of a moved user account told its new balance, once the transaction committed. */
export function balanceAnnouncements(entries: readonly EntryRow[]): Announcement[] {
  return entries.flatMap((entry) => {
    if (entry.user_id === null) return [];
    const d: EconomyBalanceEvent = {
      account: entry.account,
      balance: Number(entry.balance_after),
      transaction_id: entry.transaction_id,
    };
    return [{ topics: userTopic(entry.user_id), event: { t: 'economy.balance', d } }];
  });
}
