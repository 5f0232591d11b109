import type { Item, Listing } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/** SQL of catalog items and marketplace listings (migration 0013). */

export interface ItemRow {
  id: string;
  creator_id: string | null;
  name: string;
  description: string | null;
  asset_type: Item['asset_type'];
  asset_id: string | null;
  consumable: boolean;
  state: Item['state'];
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
  created_key: string;
}

export interface ListingRow {
  id: string;
  item_id: string;
  seller_id: string | null;
  price: string;
  quantity: number | null;
  sold_count: number;
  state: Listing['state'];
  created_at: Date;
  created_key: string;
}

const ITEM_COLUMNS = `i.id, i.creator_id, i.name, i.description, i.asset_type::text as asset_type, i.asset_id,
  i.consumable, i.state::text as state, i.created_at, i.updated_at, i.published_at,
  ${timeKeySql('i.created_at')} as created_key`;
const LISTING_COLUMNS = `l.id, l.item_id, l.seller_id, l.price::text as price, l.quantity, l.sold_count,
  l.state::text as state, l.created_at, ${timeKeySql('l.created_at')} as created_key`;

export { ITEM_COLUMNS };

export async function insertItem(
  data: DataAccess,
  item: {
    id: string;
    creatorId: string;
    name: string;
    description: string | null;
    assetType: string;
    assetId: string | null;
    consumable: boolean;
    at: Date;
  },
): Promise<ItemRow> {
  const [row] = await executeBound<ItemRow>(
    data,
    `with i as (
       insert into catalog_items (id, creator_id, name, description, asset_type, asset_id, consumable, created_at, updated_at)
       values ($1, $2, $3, $4, $5::asset_type, $6, $7, $8, $8) returning *
     ) select ${ITEM_COLUMNS} from i`,
    [
      item.id,
      item.creatorId,
      item.name,
      item.description,
      item.assetType,
      item.assetId,
      item.consumable,
      item.at,
    ],
  );
  return row as ItemRow;
}

/**
 * An item; `forUpdate` locks it for the rest of the transaction (state moves). The lock is `for no
 * key update`: it still lets a purchase's rows take the key-share lock their foreign keys need, or
 * a purchase holding the item's listing and a retire holding the item (then cancelling its
 * listings) would wait on each other.
 */
export async function itemById(
  data: DataAccess,
  id: string,
  forUpdate = false,
): Promise<ItemRow | undefined> {
  const [row] = await executeBound<ItemRow>(
    data,
    `select ${ITEM_COLUMNS} from catalog_items i where i.id = $1${forUpdate ? ' for no key update' : ''}`,
    [id],
  );
  return row;
}

export async function updateItem(
  data: DataAccess,
  id: string,
  change: { name: string | null; description: string | null; state: string | null; at: Date },
): Promise<ItemRow> {
  const [row] = await executeBound<ItemRow>(
    data,
    `with i as (
       update catalog_items set
         name = coalesce($2, name),
         description = coalesce($3, description),
         state = coalesce($4::catalog_item_state, state),
         published_at = case when $4 = 'published' then $5 else published_at end,
         updated_at = $5
       where id = $1 returning *
     ) select ${ITEM_COLUMNS} from i`,
    [id, change.name, change.description, change.state, change.at],
  );
  return row as ItemRow;
}

export async function cancelListingsOfItem(data: DataAccess, itemId: string, at: Date): Promise<void> {
  await executeBound(
    data,
    `update marketplace_listings set state = 'cancelled', updated_at = $2 where item_id = $1 and state = 'active'`,
    [itemId, at],
  );
}

export interface ItemFilter {
  creatorId: string | null;
  assetType: string | null;
  state: string | null;
  /** Who may see drafts: the caller (their own), or everyone's for an admin. */
  viewerId: string;
  admin: boolean;
}

/** Items newest first; drafts only to their creator and admins. */
export async function itemsPage(
  data: DataAccess,
  filter: ItemFilter,
  after: [string | null, string | null],
  limit: number,
): Promise<ItemRow[]> {
  return executeBound<ItemRow>(
    data,
    `select ${ITEM_COLUMNS} from catalog_items i
     where ${beforeTimeIdKey('i.created_at', 'i.id')}
       and ($4::uuid is null or i.creator_id = $4)
       and ($5::asset_type is null or i.asset_type = $5)
       and (i.state = $6::catalog_item_state
            or ($6::catalog_item_state is null and ($4::uuid is not null or i.state = 'published')))
       and (i.state <> 'draft' or i.creator_id = $7 or $8::boolean)
     order by i.created_at desc, i.id desc limit $1`,
    [
      limit,
      after[0],
      after[1],
      filter.creatorId,
      filter.assetType,
      filter.state,
      filter.viewerId,
      filter.admin,
    ],
  );
}

export async function insertListing(
  data: DataAccess,
  listing: { id: string; itemId: string; sellerId: string; price: number; quantity: number | null; at: Date },
): Promise<ListingRow> {
  const [row] = await executeBound<ListingRow>(
    data,
    `with l as (
       insert into marketplace_listings (id, item_id, seller_id, price, quantity, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $6) returning *
     ) select ${LISTING_COLUMNS} from l`,
    [listing.id, listing.itemId, listing.sellerId, listing.price, listing.quantity, listing.at],
  );
  return row as ListingRow;
}

export async function listingById(data: DataAccess, id: string): Promise<ListingRow | undefined> {
  const [row] = await executeBound<ListingRow>(
    data,
    `select ${LISTING_COLUMNS} from marketplace_listings l where l.id = $1`,
    [id],
  );
  return row;
}

/** Cancels an active listing; undefined when it is not active (or does not exist). */
export async function cancelListing(data: DataAccess, id: string, at: Date): Promise<ListingRow | undefined> {
  const [row] = await executeBound<ListingRow>(
    data,
    `with l as (
       update marketplace_listings set state = 'cancelled', updated_at = $2
       where id = $1 and state = 'active' returning *
     ) select ${LISTING_COLUMNS} from l`,
    [id, at],
  );
  return row;
}

export interface ListingFilter {
  itemId: string | null;
  sellerId: string | null;
  assetType: string | null;
}

/** Active listings newest first. */
export async function listingsPage(
  data: DataAccess,
  filter: ListingFilter,
  after: [string | null, string | null],
  limit: number,
): Promise<ListingRow[]> {
  return executeBound<ListingRow>(
    data,
    `select ${LISTING_COLUMNS} from marketplace_listings l
     where l.state = 'active' and ${beforeTimeIdKey('l.created_at', 'l.id')}
       and ($4::uuid is null or l.item_id = $4)
       and ($5::uuid is null or l.seller_id = $5)
       and ($6::asset_type is null or exists (
         select 1 from catalog_items i where i.id = l.item_id and i.asset_type = $6))
     order by l.created_at desc, l.id desc limit $1`,
    [limit, after[0], after[1], filter.itemId, filter.sellerId, filter.assetType],
  );
}
