import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Item, Listing } from '../../../protocol/economy.js';
import { itemsCreate, itemsUpdate, listingsCreate } from '../../../protocol/marketplace.js';
import { type Ctx, callerOf, hasRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeIdKeyParams } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { idOr, newId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import { userAccount } from './accounts.js';
import {
  cancelListing,
  cancelListingsOfItem,
  type ItemRow,
  insertItem,
  insertListing,
  itemById,
  itemsPage,
  listingById,
  listingsPage,
  updateItem,
} from './catalog.repository.js';
import type { IdempotentWrites, KeyedInput } from './idempotency.js';
import { ensureAccounts } from './ledger.repository.js';
import { conflictIn, filterId, toItem, toListing } from './views.js';

export interface CatalogDeps {
  writes: IdempotentWrites;
  /** Items, listings and payout requests per user and window, shared by the nodes. */
  createLimiter: RateLimiterAbstract;
  /** An admin's cancel of another seller's listing is recorded in the audit log, in its transaction. */
  audit: Pick<AuditApi, 'record'>;
}

type Page = { limit: number; cursor?: string | undefined };
type ItemState = Item['state'];

const noSuchItem = () => new AppError(ErrorCode.NOT_FOUND, 'No such item.');
const noSuchListing = () => new AppError(ErrorCode.NOT_FOUND, 'No such listing.');
const slowDown = 'Too many items, listings and payout requests; wait before making more.';

/** The state moves an item may make: draft -> published -> retired, and draft -> retired. */
const NEXT_STATES: Record<ItemState, readonly ItemState[]> = {
  draft: ['published', 'retired'],
  published: ['retired'],
  retired: [],
};

/** The catalog and the marketplace: creators' items and the fixed-price listings that sell them. */
export class CatalogService {
  constructor(private readonly deps: CatalogDeps) {}

  createItem(
    ctx: Ctx,
    input: KeyedInput & {
      name: string;
      description?: string | undefined;
      asset_type: Item['asset_type'];
      asset_id?: string | undefined;
      consumable?: boolean | undefined;
    },
  ): Promise<Item> {
    const me = callerOf(ctx).id;
    return this.deps.writes.runOnce(ctx, itemsCreate, input, async (tx, key) => {
      await consumeOrThrow(this.deps.createLimiter, me, slowDown);
      const row = await insertItem(tx, {
        id: newId(),
        creatorId: me,
        name: input.name,
        description: input.description ?? null,
        assetType: input.asset_type,
        assetId: input.asset_id ?? null,
        consumable: input.consumable ?? false,
        at: ctx.now(),
      });
      return { answer: await key.store(toItem(row)) };
    });
  }

  async getItem(ctx: Ctx, itemId: string): Promise<Item> {
    const row = await itemById(ctx.data, idOr(itemId, noSuchItem));
    if (!row || !this.canSee(ctx, row)) throw noSuchItem();
    return toItem(row);
  }

  async listItems(
    ctx: Ctx,
    query: Page & {
      creator_id?: string | undefined;
      asset_type?: string | undefined;
      state?: string | undefined;
    },
  ) {
    const caller = callerOf(ctx);
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await itemsPage(
      ctx.data,
      {
        creatorId: filterId(query.creator_id),
        assetType: query.asset_type ?? null,
        state: query.state ?? null,
        viewerId: caller.id,
        admin: hasRole(caller, 'admin'),
      },
      timeIdKeyParams(after),
      query.limit + 1,
    );
    return pageFrom(rows, query.limit, toItem, (row) => [row.created_key, row.id]);
  }

  /** Edits an item or moves its state; retiring cancels its active listings in the same transaction. */
  updateItem(
    ctx: Ctx,
    input: KeyedInput & {
      item_id: string;
      name?: string | undefined;
      description?: string | undefined;
      state?: ItemState | undefined;
    },
  ): Promise<Item> {
    const me = callerOf(ctx).id;
    const itemId = idOr(input.item_id, noSuchItem);
    return this.deps.writes.runOnce(ctx, itemsUpdate, input, async (tx, key) => {
      const row = await itemById(tx, itemId, true);
      if (!row || !this.canSee(ctx, row)) throw noSuchItem();
      if (row.creator_id !== me)
        throw new AppError(ErrorCode.FORBIDDEN, "Only the item's creator may edit it.");
      const state = input.state === row.state ? undefined : input.state;
      if (state !== undefined && !NEXT_STATES[row.state].includes(state)) {
        throw conflictIn(`An item cannot move from ${row.state} to ${state}.`, row.state);
      }
      const at = ctx.now();
      const updated = await updateItem(tx, itemId, {
        name: input.name ?? null,
        description: input.description ?? null,
        state: state ?? null,
        at,
      });
      if (state === 'retired') await cancelListingsOfItem(tx, itemId, at);
      return { answer: await key.store(toItem(updated)) };
    });
  }

  createListing(
    ctx: Ctx,
    input: KeyedInput & { item_id: string; price: number; quantity?: number | undefined },
  ): Promise<Listing> {
    const me = callerOf(ctx).id;
    const itemId = idOr(input.item_id, noSuchItem);
    return this.deps.writes.runOnce(ctx, listingsCreate, input, async (tx, key) => {
      // Shared with retiring: a listing is never made for an item being retired meanwhile.
      const item = await itemById(tx, itemId, true);
      if (!item || !this.canSee(ctx, item)) throw noSuchItem();
      if (item.creator_id !== me)
        throw new AppError(ErrorCode.FORBIDDEN, 'Only the creator of an item may list it.');
      if (item.state !== 'published') throw conflictIn('Only a published item can be listed.', item.state);
      await consumeOrThrow(this.deps.createLimiter, me, slowDown);
      // The accounts its sales credit, so that a purchase does not have to make them.
      const at = ctx.now();
      await ensureAccounts(
        tx,
        [userAccount(me, 'creator_pending'), userAccount(me, 'creator_available')],
        at,
      );
      const row = await insertListing(tx, {
        id: newId(),
        itemId,
        sellerId: me,
        price: input.price,
        quantity: input.quantity ?? null,
        at,
      });
      return { answer: await key.store(toListing(row)) };
    });
  }

  async getListing(ctx: Ctx, listingId: string): Promise<Listing> {
    callerOf(ctx);
    const row = await listingById(ctx.data, idOr(listingId, noSuchListing));
    if (!row) throw noSuchListing();
    return toListing(row);
  }

  async listListings(
    ctx: Ctx,
    query: Page & {
      item_id?: string | undefined;
      seller_id?: string | undefined;
      asset_type?: string | undefined;
    },
  ) {
    callerOf(ctx);
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await listingsPage(
      ctx.data,
      {
        itemId: filterId(query.item_id),
        sellerId: filterId(query.seller_id),
        assetType: query.asset_type ?? null,
      },
      timeIdKeyParams(after),
      query.limit + 1,
    );
    return pageFrom(rows, query.limit, toListing, (row) => [row.created_key, row.id]);
  }

  /**
   * Cancels a listing (its seller or an admin); cancelling a cancelled one again is done already.
   * An admin cancelling another seller's listing is recorded in the audit log, in the transaction
   * of the cancel, so only the cancel that happened is recorded.
   */
  async cancelListing(ctx: Ctx, listingId: string): Promise<void> {
    const caller = callerOf(ctx);
    const id = idOr(listingId, noSuchListing);
    const listing = await listingById(ctx.data, id);
    if (!listing) throw noSuchListing();
    const bySeller = listing.seller_id === caller.id;
    if (!bySeller && !hasRole(caller, 'admin')) {
      throw new AppError(ErrorCode.FORBIDDEN, 'Only the seller or an admin may cancel a listing.');
    }
    if (listing.state === 'cancelled') return;
    const cancelled = await transaction(ctx.data, async (tx) => {
      const row = await cancelListing(tx, id, ctx.now());
      if (row && !bySeller)
        await this.deps.audit.record(tx, {
          actor: { kind: 'user', id: caller.id },
          action: 'economy.listings.cancel',
          target: { type: 'listing', id },
          before: { state: 'active', seller_id: row.seller_id, item_id: row.item_id },
          after: { state: 'cancelled' },
        });
      return row;
    });
    if (cancelled) return;
    // It changed since it was read: sold out, or cancelled by someone else.
    const now = await listingById(ctx.data, id);
    if (now?.state === 'cancelled') return;
    throw conflictIn('A sold listing cannot be cancelled.', now?.state ?? 'sold');
  }

  private canSee(ctx: Ctx, item: ItemRow): boolean {
    const caller = callerOf(ctx);
    return item.state !== 'draft' || item.creator_id === caller.id || hasRole(caller, 'admin');
  }
}
