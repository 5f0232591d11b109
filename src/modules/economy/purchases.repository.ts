import type { Purchase } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { inboxLockSql } from '../notifications/index.js';
import { userAccountIdSql } from './accounts.js';
import { ITEM_COLUMNS, type ItemRow, type ListingRow } from './catalog.repository.js';

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

/** What the sale statement found and did. */
export interface Sale {
  /** The listing as the statement read it, with its item's name; undefined when there is no such listing. */
  listing:
    | { state: ListingRow['state']; seller_id: string | null; price: string; item_name: string }
    | undefined;
  /** Whether the buyer's inventory took the unit: false for a non-consumable they own already. */
  added: boolean;
  wallet_balance: string;
  /** The purchase; undefined when the sale was refused or the listing stopped being buyable. */
  purchase: PurchaseRow | undefined;
}

export interface NewSale {
  id: string;
  listingId: string;
  buyerId: string;
  walletAccountId: string;
  /** The platform's fee in basis points of the price (ECONOMY_FEE_BPS). */
  feeBps: number;
  holdUntil: Date;
  transactionId: string;
  at: Date;
}

const RECORD_SALE = namedSql<NewSale>(
  `with listing as (
     select l.id, l.item_id, l.seller_id, l.price, l.state, i.consumable, i.name as item_name,
       ${userAccountIdSql('l.seller_id', 'creator_pending')} as pending_account_id,
       ${userAccountIdSql('l.seller_id', 'creator_available')} as available_account_id,
       case when :feeBps::int > 0 then greatest(1, l.price * :feeBps::int / 10000) else 0 end as fee
     from marketplace_listings l join catalog_items i on i.id = l.item_id
     where l.id = :listingId
   ), unit as (
     insert into inventory_items (user_id, item_id, quantity, acquired_at, updated_at)
     select :buyerId, item_id, 1, :at, :at from listing where state = 'active' and seller_id <> :buyerId
     on conflict (user_id, item_id) do update set quantity = inventory_items.quantity + 1, updated_at = :at
       where (select consumable from listing)
     returning 1
   ), acc as (
     select id, balance from economy_accounts
     where id = any(array[:walletAccountId::uuid, (select pending_account_id from listing)])
       and exists (select from unit)
     order by id for update
   ), funds as (
     select exists (select from unit) as added,
            coalesce((select balance from acc where id = :walletAccountId), 0) as balance
   ), sold as (
     update marketplace_listings l set
       sold_count = l.sold_count + 1,
       state = case when l.quantity is not null and l.sold_count + 1 >= l.quantity then 'sold'::listing_state else l.state end,
       updated_at = :at
     where l.id = :listingId and l.state = 'active'
       and (select f.added and f.balance >= (select price from listing) from funds f)
     returning l.id
   ), p as (
     insert into purchases (id, listing_id, item_id, buyer_id, seller_id, price, fee, seller_amount, hold_until,
       transaction_id, seller_pending_account_id, seller_available_account_id, created_at, updated_at)
     select :id, sold.id, l.item_id, :buyerId, l.seller_id, l.price, l.fee, l.price - l.fee, :holdUntil,
       :transactionId, l.pending_account_id, l.available_account_id, :at, :at
     from sold cross join listing l
     returning *
   ), inbox as (
     select ${inboxLockSql('p.seller_id')} from p
   )
   select l.state::text as listing_state, l.seller_id as listing_seller_id, l.price::text as listing_price,
     l.item_name, f.added, f.balance::text as wallet_balance, ${PURCHASE_COLUMNS},
     (select count(*) from inbox) as inbox_locked
   from funds f left join listing l on true left join p on true`,
);

type SaleRow = Record<string, unknown> & {
  listing_state: ListingRow['state'] | null;
  listing_seller_id: string | null;
  listing_price: string | null;
  item_name: string | null;
  added: boolean;
  wallet_balance: string;
};

/**
 * A purchase's sale in one statement, which reads what it needs and writes only what the rules
 * allow, for the service to pick the refusal from what it returns (docs/modules.md, "One round
 * trip for a guarded write"). It reads the listing (and its item's name, which the seller's
 * notification shows), then takes its locks in the order every
 * write does (docs/economy.md, "Locking"): when the listing is active and someone else's, one
 * unit of its item into the buyer's inventory (a non-consumable they own already takes none, and
 * the sale stops there); the buyer's wallet and the seller's creator_pending, in id order as
 * lockAccounts takes them; then, when the wallet holds the price, the sale counted on the listing
 * if it is still active, and the purchase inserted. A limited listing turns `sold` with its last
 * unit (its check makes overselling impossible). The listing row is locked after the accounts and
 * held until the purchase commits, so buyers of one listing queue on it for the shortest time; with
 * a purchase made, the seller's inbox lock last (their notification is stored next, without a
 * statement of its own for the lock); the revenue account is left to the posting statement. The fee is the platform's basis points of
 * the price rounded down, but at least 1 coin when there is a fee at all, so that a cheap item is
 * not free of it (the seller's share may then be 0). The seller's accounts exist: a listing makes
 * them (migration 0029 made them for listings older than that).
 */
export async function recordSale(data: DataAccess, sale: NewSale): Promise<Sale> {
  const [row] = await executeNamed<SaleRow, NewSale>(data, RECORD_SALE, sale);
  const {
    listing_state,
    listing_seller_id,
    listing_price,
    item_name,
    added,
    wallet_balance,
    inbox_locked: _inboxLocked,
    ...purchase
  } = row as SaleRow;
  return {
    listing:
      listing_state === null
        ? undefined
        : {
            state: listing_state,
            seller_id: listing_seller_id,
            price: listing_price as string,
            item_name: item_name as string,
          },
    added,
    wallet_balance,
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
