import {
  CURRENCY,
  creatorBalance,
  economyLedger,
  economySettings,
  economyTransaction,
  economyWallet,
  payoutsCreate,
  payoutsGet,
  payoutsList,
} from '../../../protocol/economy.js';
import {
  adminGrant,
  adminLedger,
  adminPayoutDecide,
  adminPayouts,
  adminRefund,
  adminVerify,
} from '../../../protocol/economy-admin.js';
import {
  inventoryList,
  itemsCreate,
  itemsGet,
  itemsList,
  itemsUpdate,
  listingsCancel,
  listingsCreate,
  listingsGet,
  listingsList,
  purchasesCreate,
  purchasesGet,
  purchasesList,
} from '../../../protocol/marketplace.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { UsersApi } from '../users/index.js';
import { CatalogService } from './catalog.service.js';
import { economyCommands } from './economy.commands.js';
import { IdempotentWrites } from './idempotency.js';
import { PayoutsService } from './payouts.service.js';
import { PurchasesService } from './purchases.service.js';
import { ReleaseJob } from './release.js';
import { WalletService } from './wallet.service.js';

export type { ExtensionActor, ExtensionGrant } from './extension-grant.js';
export { type LedgerDifference, verifyLedger } from './verify.js';

export interface EconomyApi {
  /** Runs one release pass now (tests, and the CLI): releases every due hold, once. */
  releaseDue(): Promise<void>;
  /**
   * An extension's `ctx.economy.grant` (the extensions contract): the admin grant's transaction in
   * its own transaction on `data`, audited with the extension as actor, idempotent under the
   * extension's own keys. `input` is the extension's argument as given; refusals are AppErrors
   * VALIDATION_FAILED, NOT_FOUND, IDEMPOTENCY_KEY_REUSED and IDEMPOTENCY_KEY_IN_USE.
   */
  grantAs: WalletService['grantAs'];
}

/** The economy: wallets, ledger, catalog, marketplace, purchases, payouts (docs/economy.md). */
export const economyModule = defineModule({
  name: 'economy',
  tables: [
    'economy_accounts',
    'catalog_items',
    'marketplace_listings',
    'purchases',
    'creator_payouts',
    'economy_transactions',
    'economy_entries',
    'economy_idempotency_keys',
    'inventory_items',
  ],
  needs: ['users', 'audit', 'notifications'],
  commands: economyCommands,
  setup(
    { config, kv, bus, db, log, outbox },
    { users, audit, notifications }: { users: UsersApi; audit: AuditApi; notifications: NotificationsApi },
  ) {
    const writes = new IdempotentWrites(config.ECONOMY_IDEMPOTENCY_TTL_HOURS);
    const createLimit = createLimiter(kv, {
      keyPrefix: 'economy-create',
      points: config.ECONOMY_CREATE_RATE_LIMIT_COUNT,
      durationSeconds: config.ECONOMY_CREATE_RATE_LIMIT_WINDOW_SECONDS,
    });
    const wallet = new WalletService({
      writes,
      bus,
      users,
      audit,
      settings: {
        currency: CURRENCY,
        fee_bps: config.ECONOMY_FEE_BPS,
        hold_seconds: config.ECONOMY_HOLD_SECONDS,
        payout_minimum: config.ECONOMY_PAYOUT_MINIMUM,
      },
    });
    const catalog = new CatalogService({ writes, createLimiter: createLimit, audit });
    const purchases = new PurchasesService({
      writes,
      bus,
      feeBps: config.ECONOMY_FEE_BPS,
      holdSeconds: config.ECONOMY_HOLD_SECONDS,
      purchaseLimiter: createLimiter(kv, {
        keyPrefix: 'economy-purchase',
        points: config.ECONOMY_PURCHASE_RATE_LIMIT_COUNT,
        durationSeconds: config.ECONOMY_PURCHASE_RATE_LIMIT_WINDOW_SECONDS,
      }),
      audit,
      outbox,
      notifications,
    });
    const payouts = new PayoutsService({
      writes,
      bus,
      minimum: config.ECONOMY_PAYOUT_MINIMUM,
      createLimiter: createLimit,
      audit,
      outbox,
      notifications,
    });
    const job = new ReleaseJob({
      db,
      bus,
      log,
      intervalSeconds: config.ECONOMY_RELEASE_INTERVAL_SECONDS,
      idempotencyTtlHours: config.ECONOMY_IDEMPOTENCY_TTL_HOURS,
    });
    const api: EconomyApi = {
      releaseDue: () => job.runOnce(),
      grantAs: (data, actor, input, log) => wallet.grantAs(data, actor, input, log),
    };
    return {
      api,
      operations: [
        serve(economySettings, (ctx) => wallet.settings(ctx)),
        serve(economyWallet, (ctx) => wallet.wallet(ctx)),
        serve(economyLedger, (ctx, query) => wallet.ledger(ctx, query)),
        serve(economyTransaction, (ctx, { transaction_id }) => wallet.transaction(ctx, transaction_id)),
        serve(itemsCreate, (ctx, input) => catalog.createItem(ctx, input)),
        serve(itemsList, (ctx, query) => catalog.listItems(ctx, query)),
        serve(itemsGet, (ctx, { item_id }) => catalog.getItem(ctx, item_id)),
        serve(itemsUpdate, (ctx, input) => catalog.updateItem(ctx, input)),
        serve(listingsCreate, (ctx, input) => catalog.createListing(ctx, input)),
        serve(listingsList, (ctx, query) => catalog.listListings(ctx, query)),
        serve(listingsGet, (ctx, { listing_id }) => catalog.getListing(ctx, listing_id)),
        serve(listingsCancel, (ctx, { listing_id }) => catalog.cancelListing(ctx, listing_id)),
        serve(purchasesCreate, (ctx, input) => purchases.buy(ctx, input)),
        serve(purchasesList, (ctx, query) => purchases.list(ctx, query)),
        serve(purchasesGet, (ctx, { purchase_id }) => purchases.get(ctx, purchase_id)),
        serve(inventoryList, (ctx, query) => purchases.inventory(ctx, query)),
        serve(creatorBalance, (ctx) => wallet.creatorBalance(ctx)),
        serve(payoutsCreate, (ctx, input) => payouts.request(ctx, input)),
        serve(payoutsList, (ctx, query) => payouts.list(ctx, query)),
        serve(payoutsGet, (ctx, { payout_id }) => payouts.get(ctx, payout_id)),
        serve(adminGrant, (ctx, input) => wallet.grant(ctx, input)),
        serve(adminLedger, (ctx, query) => wallet.adminLedger(ctx, query)),
        serve(adminPayouts, (ctx, query) => payouts.queue(ctx, query)),
        serve(adminPayoutDecide, (ctx, input) => payouts.decide(ctx, input)),
        serve(adminRefund, (ctx, input) => purchases.refund(ctx, input)),
        serve(adminVerify, (ctx) => wallet.verify(ctx)),
      ],
      async start() {
        job.start();
      },
      stop: () => job.stop(),
    };
  },
});
