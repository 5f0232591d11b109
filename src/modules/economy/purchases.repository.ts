import type { Purchase } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { ITEM_COLUMNS, type ItemRow } from './catalog.repository.js';

/** SQL of purchases, holds and inventories (migrations 0013 and 0014). */

export interface PurchaseRow {
  id: string;
  listing_id: string;
  item_id: string;
  buyer_id: string | null;
  seller_id: string | null;
  price: string;
  fee: string;
  seller_amount: string;
  state: Purchase['state'];
  hold_until: Date;
  released_at: Date | null;
  transaction_id: string;
  refund_transaction_id: string | null;
  seller_pending_account_id: string;
  seller_available_account_id: string;
  created_at: Date;
  created_key: string;
}

const PURCHASE_COLUMNS = `p.id, p.listing_id, p.item_id, p.buyer_id, p.seller_id, p.price::text as price,
  p.fee::text as fee, p.seller_amount::text as seller_amount, p.state::text as state, p.hold_until,
  p.released_at, p.transaction_id, p.refund_transaction_id, p.seller_pending_account_id,
  p.seller_available_account_id, p.created_at, ${timeKeySql('p.created_at')} as created_key`;

export interface BuyableListing {
  id: string;
  item_id: string;
  seller_id: string | null;
  price: string;
  state: 'active' | 'sold' | 'cancelled';
  consumable: boolean;
  /** Whether the buyer's inventory took a unit: false for a non-consumable they own already. */
  added: boolean;
}

/**
 * A listing as a purchase needs it, read without a lock (sellFromListing decides), and, when it
 * is an active listing of someone else's, one more unit of its item in the buyer's inventory (a
 * non-consumable they own already takes none), in one statement. A refusal rolls the unit back
 * with the transaction.
 */
export async function listingForBuyer(
  data: DataAccess,
  listingId: string,
  buyerId: string,
  at: Date,
): Promise<BuyableListing | undefined> {
  const [row] = await executeBound<BuyableListing>(
    data,
    `with l as (
       select l.id, l.item_id, l.seller_id, l.price, l.state, i.consumable
       from marketplace_listings l join catalog_items i on i.id = l.item_id where l.id = $1
     ), added as (
       insert into inventory_items (user_id, item_id, quantity, acquired_at, updated_at)
       select $2, l.item_id, 1, $3, $3 from l where l.state = 'active' and l.seller_id <> $2
       on conflict (user_id, item_id) do update set quantity = inventory_items.quantity + 1, updated_at = $3
         where inventory_items.item_id in (select l.item_id from l where l.consumable)
       returning 1
     )
     select l.id, l.item_id, l.seller_id, l.price::text as price, l.state::text as state, l.consumable,
       exists (select 1 from added) as added
     from l`,
    [listingId, buyerId, at],
  );
  return row;
}

/** One unit less in an inventory (a refund); the row goes with its last unit. */
export async function takeFromInventory(
  data: DataAccess,
  userId: string,
  itemId: string,
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `with gone as (delete from inventory_items where user_id = $1 and item_id = $2 and quantity = 1 returning 1)
     update inventory_items set quantity = quantity - 1, updated_at = $3
     where user_id = $1 and item_id = $2 and quantity > 1`,
    [userId, itemId, at],
  );
}

/** What the sale statement found: the wallet's balance, and the purchase when it was made. */
export interface Sale {
  wallet_balance: string;
  /** False when the seller's pending account does not exist yet (nothing was done). */
  pending_exists: boolean;
  /** The purchase; undefined when the wallet was short or the listing stopped being buyable. */
  purchase: PurchaseRow | undefined;
}

/**
 * The sale in one statement: locks the buyer's wallet and the seller's pending account (in id
 * order, as lockAccounts does) and, when the wallet holds the price, counts the sale on the listing
 * if it is still active at this price and inserts the purchase. A limited listing turns `sold` with
 * its last unit (its check makes overselling impossible). The listing row is locked after the
 * accounts and held until the purchase commits, so buyers of one listing queue on it for the
 * shortest time. The revenue account is left to the posting statement.
 */
export async function sellFromListing(
  data: DataAccess,
  p: {
    id: string;
    listingId: string;
    itemId: string;
    buyerId: string;
    sellerId: string;
    price: number;
    fee: number;
    sellerAmount: number;
    holdUntil: Date;
    transactionId: string;
    walletAccountId: string;
    pendingAccountId: string;
    availableAccountId: string;
    at: Date;
  },
): Promise<Sale> {
  const [row] = await executeBound<
    Record<string, unknown> & { wallet_balance: string; pending_exists: boolean }
  >(
    data,
    `with acc as (
       select id, balance from economy_accounts where id = any(array[$14, $11]::uuid[]) order by id for update
     ), funds as (
       select coalesce((select balance from acc where id = $14), 0) as balance,
              exists (select 1 from acc where id = $11) as pending_exists
     ), l as (
       update marketplace_listings l set
         sold_count = l.sold_count + 1,
         state = case when l.quantity is not null and l.sold_count + 1 >= l.quantity then 'sold'::listing_state else l.state end,
         updated_at = $13
       where l.id = $2 and l.state = 'active' and l.price = $6 and l.seller_id = $5
         and (select balance >= $6 and pending_exists from funds)
       returning l.id
     ), p as (
       insert into purchases (id, listing_id, item_id, buyer_id, seller_id, price, fee, seller_amount, hold_until,
         transaction_id, seller_pending_account_id, seller_available_account_id, created_at, updated_at)
       select $1, l.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13 from l returning *
     )
     select f.balance::text as wallet_balance, f.pending_exists, ${PURCHASE_COLUMNS}
     from funds f left join p on true`,
    [
      p.id,
      p.listingId,
      p.itemId,
      p.buyerId,
      p.sellerId,
      p.price,
      p.fee,
      p.sellerAmount,
      p.holdUntil,
      p.transactionId,
      p.pendingAccountId,
      p.availableAccountId,
      p.at,
      p.walletAccountId,
    ],
  );
  const { wallet_balance, pending_exists, ...purchase } = row as NonNullable<typeof row>;
  return {
    wallet_balance,
    pending_exists,
    purchase: purchase.id === null ? undefined : (purchase as unknown as PurchaseRow),
  };
}

export async function purchaseById(
  data: DataAccess,
  id: string,
  forUpdate = false,
): Promise<PurchaseRow | undefined> {
  const [row] = await executeBound<PurchaseRow>(
    data,
    `select ${PURCHASE_COLUMNS} from purchases p where p.id = $1${forUpdate ? ' for update' : ''}`,
    [id],
  );
  return row;
}

export async function markRefunded(
  data: DataAccess,
  id: string,
  refundTransactionId: string,
  at: Date,
): Promise<PurchaseRow> {
  const [row] = await executeBound<PurchaseRow>(
    data,
    `with p as (
       update purchases set state = 'refunded', refund_transaction_id = $2, updated_at = $3 where id = $1 returning *
     ) select ${PURCHASE_COLUMNS} from p`,
    [id, refundTransactionId, at],
  );
  return row as PurchaseRow;
}

/** A page of a user's purchases (as buyer) or sales (as seller), newest first. */
export async function purchasesOf(
  data: DataAccess,
  userId: string,
  role: 'buyer' | 'seller',
  after: [string | null, string | null],
  limit: number,
): Promise<PurchaseRow[]> {
  const column = role === 'buyer' ? 'p.buyer_id' : 'p.seller_id';
  return executeBound<PurchaseRow>(
    data,
    `select ${PURCHASE_COLUMNS} from purchases p
     where ${column} = $1 and ${beforeTimeIdKey('p.created_at', 'p.id')}
     order by p.created_at desc, p.id desc limit $4`,
    [userId, after[0], after[1], limit],
  );
}

/**
 * Locks held purchases whose hold ended, oldest first: `skipLocked` for the job every node runs
 * (each due purchase is taken by one node), waiting for a user's own (a payout request releases
 * them and must see them all).
 */
export async function dueHolds(
  data: DataAccess,
  options: { at: Date; sellerId: string | null; limit: number; skipLocked: boolean },
): Promise<PurchaseRow[]> {
  return executeBound<PurchaseRow>(
    data,
    `select ${PURCHASE_COLUMNS} from purchases p
     where p.state = 'completed' and p.released_at is null and p.hold_until <= $1
       and ($2::uuid is null or p.seller_id = $2)
     order by p.hold_until, p.id limit $3
     for update${options.skipLocked ? ' skip locked' : ''}`,
    [options.at, options.sellerId, options.limit],
  );
}

export async function markReleased(
  data: DataAccess,
  releases: readonly { purchaseId: string; transactionId: string | null }[],
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `update purchases p set released_at = $3, release_transaction_id = r.tx, updated_at = $3
     from unnest($1::uuid[], $2::uuid[]) as r(id, tx) where p.id = r.id`,
    [releases.map((r) => r.purchaseId), releases.map((r) => r.transactionId), at],
  );
}

/** When a seller's next held sale becomes available; null when none is held. */
export async function nextReleaseOf(data: DataAccess, sellerId: string): Promise<Date | null> {
  const [row] = await executeBound<{ at: Date | null }>(
    data,
    `select min(hold_until) as at from purchases where seller_id = $1 and state = 'completed' and released_at is null`,
    [sellerId],
  );
  return row?.at ?? null;
}

export interface InventoryRow extends ItemRow {
  quantity: number;
  acquired_at: Date;
  acquired_key: string;
}

export async function inventoryOf(
  data: DataAccess,
  userId: string,
  itemId: string | null,
  after: [string | null, string | null],
  limit: number,
): Promise<InventoryRow[]> {
  return executeBound<InventoryRow>(
    data,
    `select ${ITEM_COLUMNS}, v.quantity, v.acquired_at, ${timeKeySql('v.acquired_at')} as acquired_key
     from inventory_items v join catalog_items i on i.id = v.item_id
     where v.user_id = $1 and ${beforeTimeIdKey('v.acquired_at', 'v.item_id')}
       and ($5::uuid is null or v.item_id = $5)
     order by v.acquired_at desc, v.item_id desc limit $4`,
    [userId, after[0], after[1], limit, itemId],
  );
}
