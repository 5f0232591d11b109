import { z } from 'zod';
import { filterId } from './cursors.js';
import {
  amount,
  assetTypeSchema,
  id,
  idempotent,
  inventoryEntrySchema,
  itemSchema,
  itemStateSchema,
  listingSchema,
  page,
  purchaseSchema,
  tag,
} from './economy.js';
import { pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * The economy's catalog and marketplace (docs/economy.md): items, listings, purchases and
 * inventories. Schemas, money rules and the Idempotency-Key are protocol/economy.ts's.
 */

export const itemsCreate = operation('economy.items.create', {
  tag,
  summary:
    'Create a catalog item, as a draft (name 1-100 characters, description up to 2000). At most ECONOMY_CREATE_RATE_LIMIT_COUNT creations (items, listings, payout requests) per window (429).',
  rest: { method: 'POST', path: '/api/economy/items', status: 201, idempotencyKey: true },
  request: z
    .object({
      ...idempotent,
      name: text(1, 100),
      description: text(0, 2000).optional(),
      asset_type: assetTypeSchema,
      asset_id: text(1, 128).optional(),
      consumable: z.boolean().optional(),
    })
    .strict(),
  response: itemSchema,
  errors: [401, 409, 422, 429],
});

export const itemsList = operation('economy.items.list', {
  tag,
  summary:
    "Catalog items, newest first: published ones, or with `creator_id` a creator's (drafts only to the creator and admins), filtered by `asset_type` and `state`.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/items' },
  request: z
    .object({
      creator_id: filterId.optional(),
      asset_type: assetTypeSchema.optional(),
      state: itemStateSchema.optional(),
      ...page,
    })
    .strict(),
  response: pageOf(itemSchema),
  errors: [401, 422],
});

export const itemsGet = operation('economy.items.get', {
  tag,
  summary: 'One catalog item; a draft is 404 to all but its creator and admins.',
  frame: true,
  rest: { method: 'GET', path: '/api/economy/items/:item_id' },
  request: z.object({ item_id: id }).strict(),
  response: itemSchema,
  errors: [401, 404, 422],
});

export const itemsUpdate = operation('economy.items.update', {
  tag,
  summary:
    'Edit an item or move its state (draft -> published -> retired, draft -> retired; other moves 409 with current_state). Creator only. Retiring cancels its listings; owners keep it.',
  rest: { method: 'PATCH', path: '/api/economy/items/:item_id', idempotencyKey: true },
  request: z
    .object({
      ...idempotent,
      item_id: id,
      name: text(1, 100).optional(),
      description: text(0, 2000).optional(),
      state: itemStateSchema.optional(),
    })
    .strict(),
  response: itemSchema,
  errors: [401, 403, 404, 409, 422],
});

export const listingsCreate = operation('economy.listings.create', {
  tag,
  summary:
    "List a published item of the caller's at a fixed price, optionally a limited quantity. The price never changes: relist instead.",
  rest: { method: 'POST', path: '/api/economy/listings', status: 201, idempotencyKey: true },
  request: z
    .object({
      ...idempotent,
      item_id: id,
      price: amount,
      quantity: z.number().int().min(1).max(1_000_000_000).optional(),
    })
    .strict(),
  response: listingSchema,
  errors: [401, 403, 404, 409, 422, 429],
});

export const listingsList = operation('economy.listings.list', {
  tag,
  summary: 'Active listings, newest first, filtered by item, seller or asset type.',
  frame: true,
  rest: { method: 'GET', path: '/api/economy/listings' },
  request: z
    .object({
      item_id: filterId.optional(),
      seller_id: filterId.optional(),
      asset_type: assetTypeSchema.optional(),
      ...page,
    })
    .strict(),
  response: pageOf(listingSchema),
  errors: [401, 422],
});

export const listingsGet = operation('economy.listings.get', {
  tag,
  summary: 'One listing, in any state.',
  frame: true,
  rest: { method: 'GET', path: '/api/economy/listings/:listing_id' },
  request: z.object({ listing_id: id }).strict(),
  response: listingSchema,
  errors: [401, 404, 422],
});

export const listingsCancel = operation('economy.listings.cancel', {
  tag,
  summary: 'Cancel a listing (its seller or an admin); a cancelled one answers 204 again, a sold one 409.',
  rest: { method: 'DELETE', path: '/api/economy/listings/:listing_id', status: 204 },
  request: z.object({ listing_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404, 409, 422],
});

export const purchasesCreate = operation('economy.purchases.create', {
  tag,
  summary:
    "Buy from an active listing with the caller's wallet: 409 CONFLICT when the listing is not active, ALREADY_OWNED for a non-consumable the caller owns, INSUFFICIENT_FUNDS with balance and required; 422 for one's own listing; 429 RATE_LIMITED past ECONOMY_PURCHASE_RATE_LIMIT_COUNT purchases per window (a replayed retry is not counted). Nothing moves on a refusal.",
  frame: true,
  rest: { method: 'POST', path: '/api/economy/purchases', status: 201, idempotencyKey: true },
  request: z.object({ ...idempotent, listing_id: id }).strict(),
  response: purchaseSchema,
  errors: [401, 404, 409, 422, 429],
});

export const purchasesList = operation('economy.purchases.list', {
  tag,
  summary: "The caller's purchases (role=buyer, the default) or sales (role=seller), newest first.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/purchases' },
  request: z.object({ role: z.enum(['buyer', 'seller']).default('buyer'), ...page }).strict(),
  response: pageOf(purchaseSchema),
  errors: [401, 422],
});

export const purchasesGet = operation('economy.purchases.get', {
  tag,
  summary: 'One purchase, to its buyer, its seller and admins (else 404).',
  frame: true,
  rest: { method: 'GET', path: '/api/economy/purchases/:purchase_id' },
  request: z.object({ purchase_id: id }).strict(),
  response: purchaseSchema,
  errors: [401, 404, 422],
});

export const inventoryList = operation('economy.inventory', {
  tag,
  summary: "The caller's inventory, most recently acquired first; `item_id` narrows it to one item.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/inventory' },
  request: z.object({ item_id: filterId.optional(), ...page }).strict(),
  response: pageOf(inventoryEntrySchema),
  errors: [401, 422],
});

export const marketplaceOperations = [
  itemsCreate,
  itemsList,
  itemsGet,
  itemsUpdate,
  listingsCreate,
  listingsList,
  listingsGet,
  listingsCancel,
  purchasesCreate,
  purchasesList,
  purchasesGet,
  inventoryList,
] as const;
