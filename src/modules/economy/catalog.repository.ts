import type { Item, Listing } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

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

export interface NewItem {
  id: string;
  creatorId: string;
  name: string;
  description: string | null;
  assetType: string;
  assetId: string | null;
  consumable: boolean;
  at: Date;
}

const INSERT_ITEM = namedSql<NewItem>(
  `with i as (
     insert into catalog_items (id, creator_id, name, description, asset_type, asset_id, consumable, created_at, updated_at)
     values (:id, :creatorId, :name, :description, :assetType::asset_type, :assetId, :consumable, :at, :at) returning *
   ) select ${ITEM_COLUMNS} from i`,
);

export async function insertItem(data: DataAccess, item: NewItem): Promise<ItemRow> {
  const [row] = await executeNamed<ItemRow, NewItem>(data, INSERT_ITEM, item);
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

/** A page of a filtered list: its filter, the (time, id) key it starts after, and its length. */
type PageParams<Filter> = Filter & { afterTime: string | null; afterId: string | null; limit: number };

const ITEMS_PAGE = namedSql<PageParams<ItemFilter>>(
  `select ${ITEM_COLUMNS} from catalog_items i
   where ${beforeTimeIdKey('i.created_at', 'i.id', [':afterTime', ':afterId'])}
     and (:creatorId::uuid is null or i.creator_id = :creatorId)
     and (:assetType::asset_type is null or i.asset_type = :assetType)
     and (i.state = :state::catalog_item_state
          or (:state::catalog_item_state is null and (:creatorId::uuid is not null or i.state = 'published')))
     and (i.state <> 'draft' or i.creator_id = :viewerId or :admin::boolean)
   order by i.created_at desc, i.id desc limit :limit`,
);

/** Items newest first; drafts only to their creator and admins. */
export function itemsPage(
  data: DataAccess,
  filter: ItemFilter,
  after: [string | null, string | null],
  limit: number,
): Promise<ItemRow[]> {
  return executeNamed<ItemRow, PageParams<ItemFilter>>(data, ITEMS_PAGE, {
    ...filter,
    afterTime: after[0],
    afterId: after[1],
    limit,
  });
}

export interface NewListing {
  id: string;
  itemId: string;
  sellerId: string;
  price: number;
  quantity: number | null;
  at: Date;
}

const INSERT_LISTING = namedSql<NewListing>(
  `with l as (
     insert into marketplace_listings (id, item_id, seller_id, price, quantity, created_at, updated_at)
     values (:id, :itemId, :sellerId, :price, :quantity, :at, :at) returning *
   ) select ${LISTING_COLUMNS} from l`,
);

export async function insertListing(data: DataAccess, listing: NewListing): Promise<ListingRow> {
  const [row] = await executeNamed<ListingRow, NewListing>(data, INSERT_LISTING, listing);
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

const LISTINGS_PAGE = namedSql<PageParams<ListingFilter>>(
  `select ${LISTING_COLUMNS} from marketplace_listings l
   where l.state = 'active' and ${beforeTimeIdKey('l.created_at', 'l.id', [':afterTime', ':afterId'])}
     and (:itemId::uuid is null or l.item_id = :itemId)
     and (:sellerId::uuid is null or l.seller_id = :sellerId)
     and (:assetType::asset_type is null or exists (
       select 1 from catalog_items i where i.id = l.item_id and i.asset_type = :assetType))
   order by l.created_at desc, l.id desc limit :limit`,
);

/** Active listings newest first. */
export function listingsPage(
  data: DataAccess,
  filter: ListingFilter,
  after: [string | null, string | null],
  limit: number,
): Promise<ListingRow[]> {
  return executeNamed<ListingRow, PageParams<ListingFilter>>(data, LISTINGS_PAGE, {
    ...filter,
    afterTime: after[0],
    afterId: after[1],
    limit,
  });
}
