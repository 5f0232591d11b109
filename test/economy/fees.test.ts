import { describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { type Services, useServices } from '../helpers/services.js';
import { asAdmin, buy, fundedUser, key, listedItem } from './economy.js';

/** The platform's fee: `max(1, floor(price * fee_bps / 10000))` when fee_bps > 0, else 0. */

/** A purchase at `price`, with its transaction's entries as [account, kind, amount], sorted. */
async function purchaseAt(s: Services, price: number) {
  const admin = await s.createUser();
  const seller = await s.createUser();
  const buyer = await fundedUser(s, admin, 100);
  const { listing } = await listedItem(s, seller, { price });
  const purchase = await buy(s, buyer, listing.id);
  const tx = await s.call('economy.transaction', s.ctxFor(asAdmin(admin.user)), {
    transaction_id: purchase.transaction_id,
  });
  const entries = tx.entries.map((e) => [e.account, e.kind, e.amount]).sort();
  return { admin, seller, purchase, entries };
}

describe('the fee at the default 30%', () => {
  const services = useServices();

  it.each([
    [1, 1, 0],
    [2, 1, 1],
    [3, 1, 2],
    [4, 1, 3],
    [10, 3, 7],
  ])('takes at a price of %i a fee of %i, leaving the seller %i', async (price, fee, sellerAmount) => {
    const s = services();
    const { seller, purchase, entries } = await purchaseAt(s, price);
    expect(purchase).toMatchObject({ price, fee, seller_amount: sellerAmount });
    // An entry of 0 is not written: a seller share of 0 leaves the sale out.
    expect(entries).toEqual(
      [
        ['wallet', 'purchase', -price],
        ['platform_revenue', 'fee', fee],
        ...(sellerAmount > 0 ? [['creator_pending', 'sale', sellerAmount]] : []),
      ].sort(),
    );
    const balance = await s.call('economy.creator.balance', s.ctxFor(seller.user), undefined);
    expect(balance.pending).toBe(sellerAmount);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refunds a purchase at a price of 1, whose seller got nothing, by negating its two entries', async () => {
    const s = services();
    const { admin, purchase } = await purchaseAt(s, 1);
    const adminCtx = s.ctxFor(asAdmin(admin.user));
    const refunded = await s.call('economy.admin.refund', adminCtx, {
      idempotency_key: key(),
      purchase_id: purchase.id,
      reason: 'chargeback',
    });
    const tx = await s.call('economy.transaction', adminCtx, {
      transaction_id: refunded.refund_transaction_id as string,
    });
    expect(tx.entries.map((e) => [e.account, e.kind, e.amount]).sort()).toEqual(
      [
        ['platform_revenue', 'refund', -1],
        ['wallet', 'refund', 1],
      ].sort(),
    );
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});

describe('the release of a sale that left the seller nothing', () => {
  const services = useServices({ ECONOMY_HOLD_SECONDS: 0 });

  it('marks it released without a transaction, and the ledger stays clean', async () => {
    const s = services();
    const { seller, purchase } = await purchaseAt(s, 1);
    await s.apis.economy.releaseDue();
    const balance = await s.call('economy.creator.balance', s.ctxFor(seller.user), undefined);
    expect(balance).toMatchObject({ pending: 0, available: 0, next_release_at: null });
    expect(purchase.seller_amount).toBe(0);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});

describe('no fee at ECONOMY_FEE_BPS=0', () => {
  const services = useServices({ ECONOMY_FEE_BPS: 0 });

  it.each([1, 3, 10])('takes no fee at a price of %i and writes no fee entry', async (price) => {
    const s = services();
    const { purchase, entries } = await purchaseAt(s, price);
    expect(purchase).toMatchObject({ price, fee: 0, seller_amount: price });
    expect(entries).toEqual(
      [
        ['wallet', 'purchase', -price],
        ['creator_pending', 'sale', price],
      ].sort(),
    );
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});
