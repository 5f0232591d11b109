import { z } from 'zod';
import { timeIdCursor } from './cursors.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';

/**
 * The economy (docs/economy.md): wallets and creator balances kept by a double-entry ledger, a
 * catalog of items, fixed-price listings, purchases with a platform fee and a hold, inventories
 * and payouts (the admins' tools: economy-admin.ts). Money is an integer of minor units of one
 * currency, `coin`.
 *
 * Every POST and PATCH carries an idempotency key (REST: the `Idempotency-Key` header; a frame:
 * its `idempotency_key` field): a retry with the same key and request replays the first answer
 * and moves nothing, a retry with another request answers 422 IDEMPOTENCY_KEY_REUSED.
 */

export const CURRENCY = 'coin';
/** The largest amount or price a request may name (JSON carries it exactly). */
export const MAX_AMOUNT = 1_000_000_000_000;

export const id = z.string().max(64);
const currency = z.literal(CURRENCY);
/** A request amount or price: an integer of minor units, 1 to 10^12 (no strings, no fractions). */
export const amount = z.number().int().min(1).max(MAX_AMOUNT);
/** A balance or entry amount as stored: a signed integer of minor units. */
export const money = z.number().int();

/** The Idempotency-Key: 1-255 visible ASCII characters, chosen by the client per logical write. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be visible ASCII characters')
  .describe(
    'A key the client picks per logical write. A retry with the same key and request gets the first answer again, with Idempotent-Replayed: true, and does nothing; the same key with another request answers 422 IDEMPOTENCY_KEY_REUSED.',
  );
/** The request field of every write: its Idempotency-Key (REST: the header). */
export const idempotent = { idempotency_key: idempotencyKeySchema };
/** The query of a list ordered by (time, id), its cursor checked by the schema. */
export const page = { limit: listQuery.limit, cursor: timeIdCursor };

export const assetTypeSchema = z.enum([
  'avatar_body',
  'avatar_item',
  'clothing',
  'accessory',
  'emote',
  'model',
  'texture',
  'audio',
  'world_template',
]);
export const userAccountSchema = z.enum(['wallet', 'creator_pending', 'creator_available', 'creator_payout']);
export const platformAccountSchema = z.enum(['platform_issuance', 'platform_revenue', 'platform_payouts']);
export const accountSchema = z.enum([...userAccountSchema.options, ...platformAccountSchema.options]);
export type AccountKind = z.infer<typeof accountSchema>;
export const entryKindSchema = z.enum([
  'grant',
  'purchase',
  'sale',
  'fee',
  'refund',
  'payout',
  'adjustment',
  'release',
]);
export type EntryKind = z.infer<typeof entryKindSchema>;
export const itemStateSchema = z.enum(['draft', 'published', 'retired']);
export const listingStateSchema = z.enum(['active', 'sold', 'cancelled']);
export const purchaseStateSchema = z.enum(['completed', 'refunded']);
export const payoutStateSchema = z.enum(['requested', 'approved', 'rejected', 'paid']);
export type PayoutState = z.infer<typeof payoutStateSchema>;

export const settingsSchema = z.object({
  currency,
  /** The platform's fee in basis points of the price (3000: 30%), rounded down but at least 1 coin when above 0. */
  fee_bps: z.number().int(),
  /** How long a sale's earnings wait in creator_pending before they are available. */
  hold_seconds: z.number().int(),
  payout_minimum: z.number().int(),
});

export const walletSchema = z.object({
  user_id: z.string(),
  currency,
  balance: money,
  /** Null while the wallet never moved. */
  updated_at: z.string().nullable(),
});

export const entrySchema = z.object({
  id: z.string(),
  transaction_id: z.string(),
  account: accountSchema,
  /** The account's owner; null on platform accounts and once the owner's account was deleted. */
  user_id: z.string().nullable(),
  kind: entryKindSchema,
  /** Signed: positive credits the account. */
  amount: money,
  balance_after: money,
  currency,
  created_at: z.string(),
});
export type Entry = z.infer<typeof entrySchema>;

/**
 * An entry of a transaction as its reader may see it: a non-admin sees `user_id` and
 * `balance_after` only on entries of their own accounts; on the other parties' entries (the
 * seller's, the buyer's, the platform's) both are null.
 */
export const transactionEntrySchema = entrySchema.extend({
  /** The account's owner: null on platform accounts, deleted owners' accounts and other users' entries. */
  user_id: z.string().nullable(),
  /** The account's balance after the entry: null on entries of accounts the reader does not own. */
  balance_after: money.nullable(),
});
export type TransactionEntry = z.infer<typeof transactionEntrySchema>;

export const transactionSchema = z.object({
  id: z.string(),
  kind: entryKindSchema,
  created_at: z.string(),
  purchase_id: z.string().nullable(),
  payout_id: z.string().nullable(),
  entries: z.array(transactionEntrySchema),
});
export type Transaction = z.infer<typeof transactionSchema>;

export const itemSchema = z.object({
  id: z.string(),
  /** Null once the creator's account was deleted (the item is then retired). */
  creator_id: z.string().nullable(),
  name: z.string(),
  description: z.string().nullable(),
  asset_type: assetTypeSchema,
  asset_id: z.string().nullable(),
  consumable: z.boolean(),
  state: itemStateSchema,
  created_at: z.string(),
  updated_at: z.string(),
  published_at: z.string().nullable(),
});
export type Item = z.infer<typeof itemSchema>;

export const listingSchema = z.object({
  id: z.string(),
  item_id: z.string(),
  seller_id: z.string().nullable(),
  price: money,
  currency,
  /** Null for an unlimited listing. */
  quantity: z.number().int().nullable(),
  sold_count: z.number().int(),
  state: listingStateSchema,
  created_at: z.string(),
});
export type Listing = z.infer<typeof listingSchema>;

export const purchaseSchema = z.object({
  id: z.string(),
  listing_id: z.string(),
  item_id: z.string(),
  buyer_id: z.string().nullable(),
  seller_id: z.string().nullable(),
  price: money,
  fee: money,
  seller_amount: money,
  currency,
  state: purchaseStateSchema,
  /** Until then the seller's share waits in creator_pending, and an admin may refund the purchase. */
  hold_until: z.string(),
  transaction_id: z.string(),
  refund_transaction_id: z.string().nullable(),
  created_at: z.string(),
});
export type Purchase = z.infer<typeof purchaseSchema>;

export const inventoryEntrySchema = z.object({
  item_id: z.string(),
  item: itemSchema,
  quantity: z.number().int(),
  acquired_at: z.string(),
});

export const creatorBalanceSchema = z.object({
  user_id: z.string(),
  currency,
  pending: money,
  available: money,
  in_payout: money,
  paid_out: money,
  /** When the next held sale becomes available; null when none is held. */
  next_release_at: z.string().nullable(),
});

export const payoutSchema = z.object({
  id: z.string(),
  user_id: z.string().nullable(),
  amount: money,
  currency,
  state: payoutStateSchema,
  note: z.string().nullable(),
  decided_by: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Payout = z.infer<typeof payoutSchema>;

export const grantSchema = z.object({
  transaction_id: z.string(),
  user_id: z.string(),
  amount: money,
  currency,
  /** The wallet's balance after the grant. */
  balance: money,
});

export const tag = 'economy';

export const economySettings = operation('economy.settings', {
  tag,
  summary: 'The economy settings: currency, fee (basis points), hold and payout minimum.',
  frame: true,
  rest: { method: 'GET', path: '/api/economy/settings' },
  response: settingsSchema,
  errors: [401],
});

export const economyWallet = operation('economy.wallet', {
  tag,
  summary: "The caller's wallet; a wallet that never moved answers balance 0 and updated_at null.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/wallet' },
  response: walletSchema,
  errors: [401],
});

export const economyLedger = operation('economy.ledger', {
  tag,
  summary: "The caller's ledger entries, newest first; `account` narrows them to one of their accounts.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/ledger' },
  request: z.object({ account: userAccountSchema.optional(), ...page }).strict(),
  response: pageOf(entrySchema),
  errors: [401, 422],
});

export const economyTransaction = operation('economy.transaction', {
  tag,
  summary:
    "One ledger transaction with its entries: to admins and to owners of one of its accounts (else 404). A non-admin sees user_id and balance_after only on their own accounts' entries (null on the others').",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/transactions/:transaction_id' },
  request: z.object({ transaction_id: id }).strict(),
  response: transactionSchema,
  errors: [401, 404, 422],
});

export const creatorBalance = operation('economy.creator.balance', {
  tag,
  summary: "The caller's creator balances: pending (held sales), available, in payout and paid out.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/creator/balance' },
  response: creatorBalanceSchema,
  errors: [401],
});

export const payoutsCreate = operation('economy.payouts.create', {
  tag,
  summary:
    "Request a payout of available earnings (at least ECONOMY_PAYOUT_MINIMUM, else 422; over what is available 409 INSUFFICIENT_FUNDS). The caller's due holds are released first.",
  rest: { method: 'POST', path: '/api/economy/payouts', status: 201, idempotencyKey: true },
  request: z.object({ ...idempotent, amount }).strict(),
  response: payoutSchema,
  errors: [401, 409, 422, 429],
});

export const payoutsList = operation('economy.payouts.list', {
  tag,
  summary: "The caller's payout requests, newest first.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/payouts' },
  request: z.object({ ...page }).strict(),
  response: pageOf(payoutSchema),
  errors: [401, 422],
});

export const payoutsGet = operation('economy.payouts.get', {
  tag,
  summary: "One payout request: the caller's (admins: any), else 404.",
  frame: true,
  rest: { method: 'GET', path: '/api/economy/payouts/:payout_id' },
  request: z.object({ payout_id: id }).strict(),
  response: payoutSchema,
  errors: [401, 404, 422],
});

export const economyOperations = [
  economySettings,
  economyWallet,
  economyLedger,
  economyTransaction,
  creatorBalance,
  payoutsCreate,
  payoutsList,
  payoutsGet,
] as const;

/** Events on the user's own topic, so a live client updates without polling. */
export interface EconomyBalanceEvent {
  account: AccountKind;
  balance: number;
  transaction_id: string;
}
export type EconomySaleEvent = Purchase;
export type EconomyPayoutEvent = Payout;

/** The economy's events, by server frame type: a balance of the user's changed; sales and payout moves. */
export interface EconomyEventPayloads {
  'economy.balance': EconomyBalanceEvent;
  'economy.sale': EconomySaleEvent;
  'economy.payout': EconomyPayoutEvent;
}
