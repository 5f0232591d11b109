import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { Purchase } from '../../../protocol/economy.js';
import { adminRefund } from '../../../protocol/economy-admin.js';
import { purchasesCreate } from '../../../protocol/marketplace.js';
import { type Announcement, type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeIdKeyParams } from '../../platform/cursor.js';
import { inOneRoundTrip } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { idOr, newId } from '../../platform/ids.js';
import type { Outbox } from '../../platform/outbox.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import { insufficientFunds, platformAccount, userAccount } from './accounts.js';
import { listingById } from './catalog.repository.js';
import type { IdempotentWrites, KeyedInput } from './idempotency.js';
import { lockAccounts, post, transactionById } from './ledger.repository.js';
import { itemSoldNote } from './notes.js';
import {
  inventoryOf,
  markRefunded,
  purchaseById,
  purchasesOf,
  recordSale,
  takeFromInventory,
} from './purchases.repository.js';
import { balanceAnnouncements, conflictIn, filterId, toItem, toPurchase } from './views.js';

export interface PurchasesDeps {
  writes: IdempotentWrites;
  bus: EventBus;
  feeBps: number;
  holdSeconds: number;
  /** Purchases per buyer and window (shared through Redis when the service has it). */
  purchaseLimiter: RateLimiterAbstract;
  /** Admins' refunds are recorded in the audit log, in their transaction. */
  audit: Pick<AuditApi, 'record'>;
  /** `economy.purchase.completed` is recorded in the purchase's transaction, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'record'>;
  /** The seller's `economy.item_sold`, stored in the purchase's transaction and announced after it. */
  notifications: Pick<NotificationsApi, 'store' | 'announce'>;
}

type Page = { limit: number; cursor?: string | undefined };

const noSuchListing = () => new AppError(ErrorCode.NOT_FOUND, 'No such listing.');
const noSuchPurchase = () => new AppError(ErrorCode.NOT_FOUND, 'No such purchase.');
const REVENUE = platformAccount('platform_revenue');
const PURCHASE_COMPLETED = 'economy.purchase.completed';

/**
 * Purchases: the buyer's wallet pays the price, the platform keeps its fee and the seller's share
 * waits in their creator_pending account until the hold ends (the refund window), all in one
 * ledger transaction with the sale counted on the listing and the unit added to the inventory.
 */
export class PurchasesService {
  constructor(private readonly deps: PurchasesDeps) {}

  /**
   * A purchase, its steps in the order of the walk in docs/economy.md: under the key's claim
   * (idempotency.ts), one point of the purchase rate, the sale in one statement (recordSale:
   * the listing read, the inventory's unit, the accounts' locks, the listing's count, the
   * purchase), then in one round trip with the COMMIT the answer stored under the key, the event,
   * the seller's notification, and last the ledger transaction, which locks the revenue account
   * every purchase moves.
   */
  buy(ctx: Ctx, input: KeyedInput & { listing_id: string }): Promise<Purchase> {
    const buyer = callerOf(ctx).id;
    const listingId = idOr(input.listing_id, noSuchListing);
    return this.deps.writes.runOnce(ctx, purchasesCreate, input, async (tx, key) => {
      // Under the key's claim, so a replayed retry is answered before it and spends nothing; and
      // before any other lock, so the round trip to the limiter holds only the buyer's own key row.
      await consumeOrThrow(this.deps.purchaseLimiter, buyer, 'Too many purchases; wait before buying more.');
      const at = ctx.now();
      const wallet = userAccount(buyer, 'wallet');
      const sale = await recordSale(tx, {
        id: newId(),
        listingId,
        buyerId: buyer,
        walletAccountId: wallet.id,
        feeBps: this.deps.feeBps,
        holdUntil: new Date(at.getTime() + this.deps.holdSeconds * 1000),
        transactionId: newId(),
        at,
      });
      const { listing } = sale;
      if (!listing) throw noSuchListing();
      const sellerId = listing.seller_id;
      if (listing.state !== 'active' || sellerId === null) {
        throw conflictIn('This listing is not active.', listing.state);
      }
      if (sellerId === buyer) {
        throw new AppError(ErrorCode.VALIDATION_FAILED, 'You cannot buy from your own listing.', {
          errors: [{ path: 'listing_id', message: 'must be another user’s listing' }],
        });
      }
      if (!sale.added) throw new AppError(ErrorCode.ALREADY_OWNED, 'You own this item already.');
      const price = Number(listing.price);
      const balance = Number(sale.wallet_balance);
      if (balance < price) throw insufficientFunds(balance, price);
      const row = sale.purchase;
      if (!row) {
        // Sold out or cancelled since it was read.
        const now = await listingById(tx, listingId);
        throw conflictIn('This listing is not active.', now?.state ?? 'cancelled');
      }
      // The answer stored, the event recorded, the seller's notification and the ledger
      // transaction go with the COMMIT in one round trip: their values are all known now. The
      // posting comes last, so the revenue account it locks (every purchase's) is held only while
      // the server runs it and commits, with no round trip in between. The notification's lock
      // (the seller's inbox) was the sale statement's last, after the accounts and the listing.
      const purchase = toPurchase(row);
      const event: DomainEventData[typeof PURCHASE_COMPLETED] = { purchase };
      const [answer, , notes, { entries }] = await inOneRoundTrip(
        tx,
        () =>
          Promise.all([
            key.store(purchase),
            this.deps.outbox.hasConsumers(PURCHASE_COMPLETED)
              ? this.deps.outbox.record(tx, PURCHASE_COMPLETED, event)
              : undefined,
            this.deps.notifications.store(
              tx,
              [
                itemSoldNote(
                  { ...purchase, seller_id: sellerId },
                  { id: row.item_id, name: listing.item_name },
                ),
              ],
              at,
              true,
            ),
            post(
              tx,
              { kind: 'purchase', purchaseId: row.id, at },
              [
                { accountId: wallet.id, kind: 'purchase', amount: -price },
                { accountId: row.seller_pending_account_id, kind: 'sale', amount: Number(row.seller_amount) },
                { accountId: REVENUE.id, kind: 'fee', amount: Number(row.fee) },
              ],
              row.transaction_id,
            ),
          ]),
        { commit: true },
      );
      return {
        answer,
        // Both calls issue their events in this turn, in this order, so Redis gets them all in
        // one pipeline (auto-pipelining): one round trip where awaiting the first took two.
        afterCommit: async () => {
          await Promise.all([
            this.deps.bus.publishAllCommitted(
              [...balanceAnnouncements(entries), ...saleAnnouncement(sellerId, answer.value)],
              ctx.log,
            ),
            this.deps.notifications.announce(notes, ctx.log),
          ]);
        },
      };
    });
  }

  async get(ctx: Ctx, purchaseId: string): Promise<Purchase> {
    const caller = callerOf(ctx);
    const row = await purchaseById(ctx.data, idOr(purchaseId, noSuchPurchase));
    if (!row || (row.buyer_id !== caller.id && row.seller_id !== caller.id && !hasRole(caller, 'admin'))) {
      throw noSuchPurchase();
    }
    return toPurchase(row);
  }

  async list(ctx: Ctx, query: Page & { role: 'buyer' | 'seller' }) {
    const me = callerOf(ctx).id;
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await purchasesOf(ctx.data, me, query.role, timeIdKeyParams(after), query.limit + 1);
    return pageFrom(rows, query.limit, toPurchase, (row) => [row.created_key, row.id]);
  }

  async inventory(ctx: Ctx, query: Page & { item_id?: string | undefined }) {
    const me = callerOf(ctx).id;
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const itemId = filterId(query.item_id);
    const rows = await inventoryOf(ctx.data, me, itemId, timeIdKeyParams(after), query.limit + 1);
    return pageFrom(
      rows,
      query.limit,
      (row) => ({
        item_id: row.id,
        item: toItem(row),
        quantity: row.quantity,
        acquired_at: new Date(row.acquired_at).toISOString(),
      }),
      (row) => [row.acquired_key, row.id],
    );
  }

  /**
   * Refunds a purchase while its earnings are held (the hold is the refund window): the purchase's
   * entries are appended again negated, never edited, and one unit leaves the buyer's inventory.
   */
  refund(ctx: Ctx, input: KeyedInput & { purchase_id: string; reason: string }): Promise<Purchase> {
    const admin = requireRole(ctx, 'admin');
    const purchaseId = idOr(input.purchase_id, noSuchPurchase);
    return this.deps.writes.runOnce(ctx, adminRefund, input, async (tx, key) => {
      const at = ctx.now();
      const row = await purchaseById(tx, purchaseId, true);
      if (!row) throw noSuchPurchase();
      if (row.state === 'refunded') throw conflictIn('This purchase was refunded already.', row.state);
      if (row.released_at !== null || row.hold_until.getTime() <= at.getTime()) {
        throw conflictIn("The hold is over: the seller's earnings were released.", row.state);
      }
      // Before the accounts, in the order a purchase takes them, so the two never wait for each other.
      if (row.buyer_id !== null) await takeFromInventory(tx, row.buyer_id, row.item_id, at);
      const original = await transactionById(tx, row.transaction_id);
      const lines = original?.entries ?? [];
      const locked = await lockAccounts(
        tx,
        lines.map((entry) => entry.account_id),
      );
      // What the refund takes back from a user account must be there (the seller's pending share).
      const debited = lines.find(
        (entry) => locked.has(entry.account_id) && (locked.get(entry.account_id) ?? 0) < Number(entry.amount),
      );
      if (debited) throw insufficientFunds(locked.get(debited.account_id) ?? 0, Number(debited.amount));
      const refundTx = newId();
      const { entries } = await post(
        tx,
        { kind: 'refund', purchaseId, actorId: admin.id, reason: input.reason, at },
        lines.map((entry) => ({
          accountId: entry.account_id,
          kind: 'refund',
          amount: -Number(entry.amount),
        })),
        refundTx,
      );
      const purchase = toPurchase(await markRefunded(tx, purchaseId, refundTx, at));
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'economy.purchases.refund',
        target: { type: 'purchase', id: purchaseId },
        before: { state: row.state },
        after: { state: 'refunded', transaction_id: refundTx, reason: input.reason },
      });
      return {
        answer: await key.store(purchase),
        afterCommit: () =>
          this.deps.bus.publishAllCommitted(
            [...balanceAnnouncements(entries), ...saleAnnouncement(row.seller_id, purchase)],
            ctx.log,
          ),
      };
    });
  }
}

/** The seller told of a sale or its refund (none for a seller whose account is gone). */
function saleAnnouncement(sellerId: string | null, purchase: Purchase): Announcement[] {
  return sellerId === null
    ? []
    : [{ topics: userTopic(sellerId), event: { t: 'economy.sale', d: purchase } }];
}
