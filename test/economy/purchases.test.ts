import { describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, balanceOf, buy, fundedUser, key, ledgerCounts, listedItem } from './economy.js';

describe('purchases', () => {
  // One buyer races 50 purchases here: the per-user purchase rate (purchase-rate.test.ts) is not the subject.
  const services = useServices({ ECONOMY_PURCHASE_RATE_LIMIT_COUNT: 1000 });

  it('moves the price from the wallet to the seller (held) and the platform fee, and adds the item to the inventory', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { item, listing } = await listedItem(s, seller, { price: 333 });
    const purchase = await buy(s, buyer, listing.id);
    expect(purchase).toMatchObject({
      listing_id: listing.id,
      item_id: item.id,
      buyer_id: buyer.user.id,
      seller_id: seller.user.id,
      price: 333,
      fee: 99,
      seller_amount: 234,
      currency: 'coin',
      state: 'completed',
      refund_transaction_id: null,
    });
    const held = Date.parse(purchase.hold_until) - Date.parse(purchase.created_at);
    expect(held).toBe(604_800_000);
    expect(await balanceOf(s, buyer)).toBe(667);
    const tx = await s.call('economy.transaction', s.ctxFor(seller.user), {
      transaction_id: purchase.transaction_id,
    });
    expect(tx.entries.map((e) => [e.account, e.kind, e.amount]).sort()).toEqual(
      [
        ['creator_pending', 'sale', 234],
        ['platform_revenue', 'fee', 99],
        ['wallet', 'purchase', -333],
      ].sort(),
    );
    const balance = await s.call('economy.creator.balance', s.ctxFor(seller.user), undefined);
    expect(balance).toMatchObject({ pending: 234, available: 0, in_payout: 0, paid_out: 0 });
    expect(balance.next_release_at).toBe(purchase.hold_until);
    const inventory = await s.call('economy.inventory', s.ctxFor(buyer.user), {});
    expect(inventory.items).toEqual([expect.objectContaining({ item_id: item.id, quantity: 1 })]);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refuses a second purchase of a non-consumable with ALREADY_OWNED and moves nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 100 });
    await buy(s, buyer, listing.id);
    const before = await ledgerCounts(s);
    await expect(buy(s, buyer, listing.id)).rejects.toMatchObject({ code: 'ALREADY_OWNED' });
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await balanceOf(s, buyer)).toBe(900);
  });

  it('adds one unit per purchase of a consumable', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { item, listing } = await listedItem(s, seller, { price: 10, consumable: true });
    for (let i = 0; i < 3; i++) await buy(s, buyer, listing.id);
    const inventory = await s.call('economy.inventory', s.ctxFor(buyer.user), { item_id: item.id });
    expect(inventory.items.map((row) => row.quantity)).toEqual([3]);
  });

  it('refuses a purchase the wallet cannot pay with INSUFFICIENT_FUNDS, its balance and the price, and writes nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 50);
    const broke = await s.createUser();
    const { listing } = await listedItem(s, seller, { price: 60 });
    const before = await ledgerCounts(s);
    await expect(buy(s, buyer, listing.id)).rejects.toMatchObject({
      code: 'INSUFFICIENT_FUNDS',
      extra: { details: { balance: 50, required: 60 } },
    });
    await expect(buy(s, broke, listing.id)).rejects.toMatchObject({
      code: 'INSUFFICIENT_FUNDS',
      extra: { details: { balance: 0, required: 60 } },
    });
    expect(await ledgerCounts(s)).toEqual(before);
    expect(
      (await s.call('economy.listings.get', s.ctxFor(buyer.user), { listing_id: listing.id })).sold_count,
    ).toBe(0);
  });

  it('refuses buying from one’s own listing (422), a missing listing (404) and a cancelled one (409), writing nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 10 });
    const before = await ledgerCounts(s);
    await expect(buy(s, seller, listing.id)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await expect(buy(s, seller, '01a1ffb2-0000-7000-8000-000000000000')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(buy(s, seller, 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await s.call('economy.listings.cancel', s.ctxFor(seller.user), { listing_id: listing.id });
    const buyer = await fundedUser(s, admin, 100);
    const afterGrant = await ledgerCounts(s);
    await expect(buy(s, buyer, listing.id)).rejects.toMatchObject({
      code: 'CONFLICT',
      extra: { details: { current_state: 'cancelled' } },
    });
    expect(await ledgerCounts(s)).toEqual(afterGrant);
    expect(Number(afterGrant?.entries) - Number(before?.entries)).toBe(2);
  });

  it('answers a retried purchase (same key) with the first purchase and charges once', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 100);
    const { listing } = await listedItem(s, seller, { price: 30, consumable: true });
    const retryKey = key();
    const first = await buy(s, buyer, listing.id, retryKey);
    const before = await ledgerCounts(s);
    const again = await buy(s, buyer, listing.id, retryKey);
    expect(again).toEqual(first);
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await balanceOf(s, buyer)).toBe(70);
  });

  it('lets exactly 5 of 50 racing purchases through on a wallet that affords 5', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 500);
    const { item, listing } = await listedItem(s, seller, { price: 100, consumable: true });
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => buy(s, buyer, listing.id)));
    const won = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(5);
    expect(new Set(refused.map((r) => (r.reason as { code: string }).code))).toEqual(
      new Set(['INSUFFICIENT_FUNDS']),
    );
    expect(await balanceOf(s, buyer)).toBe(0);
    const inventory = await s.call('economy.inventory', s.ctxFor(buyer.user), { item_id: item.id });
    expect(inventory.items[0]?.quantity).toBe(5);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('never oversells a limited listing, which turns sold with its last unit', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyers = await Promise.all(Array.from({ length: 8 }, () => fundedUser(s, admin, 100)));
    const { listing } = await listedItem(s, seller, { price: 10, quantity: 3 });
    const results = await Promise.allSettled(buyers.map((buyer) => buy(s, buyer, listing.id)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const after = await s.call('economy.listings.get', s.ctxFor(seller.user), { listing_id: listing.id });
    expect(after).toMatchObject({ state: 'sold', sold_count: 3, quantity: 3 });
    await expect(
      s.call('economy.listings.cancel', s.ctxFor(seller.user), { listing_id: listing.id }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('shows a purchase to its buyer, its seller and admins only', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 100);
    const stranger = await s.createUser();
    const { listing } = await listedItem(s, seller, { price: 10 });
    const purchase = await buy(s, buyer, listing.id);
    for (const viewer of [buyer.user, seller.user, asAdmin(stranger.user)]) {
      expect((await s.call('economy.purchases.get', s.ctxFor(viewer), { purchase_id: purchase.id })).id).toBe(
        purchase.id,
      );
    }
    await expect(
      s.call('economy.purchases.get', s.ctxFor(stranger.user), { purchase_id: purchase.id }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const sales = await s.call('economy.purchases.list', s.ctxFor(seller.user), { role: 'seller' });
    expect(sales.items.map((p) => p.id)).toEqual([purchase.id]);
    const bought = await s.call('economy.purchases.list', s.ctxFor(buyer.user), {});
    expect(bought.items.map((p) => p.id)).toEqual([purchase.id]);
  });
});

describe('refunds', () => {
  const services = useServices();

  it('appends the purchase negated within the hold, takes the unit back, and refuses a second refund', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 200 });
    const purchase = await buy(s, buyer, listing.id);
    const adminCtx = s.ctxFor(asAdmin(admin.user));
    const refunded = await s.call('economy.admin.refund', adminCtx, {
      idempotency_key: key(),
      purchase_id: purchase.id,
      reason: 'chargeback',
    });
    expect(refunded).toMatchObject({ id: purchase.id, state: 'refunded' });
    const tx = await s.call('economy.transaction', adminCtx, {
      transaction_id: refunded.refund_transaction_id as string,
    });
    expect(tx.entries.map((e) => [e.account, e.kind, e.amount]).sort()).toEqual(
      [
        ['creator_pending', 'refund', -140],
        ['platform_revenue', 'refund', -60],
        ['wallet', 'refund', 200],
      ].sort(),
    );
    expect(await balanceOf(s, buyer)).toBe(1000);
    expect((await s.call('economy.inventory', s.ctxFor(buyer.user), {})).items).toEqual([]);
    const before = await ledgerCounts(s);
    await expect(
      s.call('economy.admin.refund', adminCtx, {
        idempotency_key: key(),
        purchase_id: purchase.id,
        reason: 'again',
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT', extra: { details: { current_state: 'refunded' } } });
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refuses a refund by a non-admin with FORBIDDEN', async () => {
    const s = services();
    const moderator = await s.createUser();
    await expect(
      s.call('economy.admin.refund', s.ctxFor({ ...moderator.user, roles: ['user', 'moderator'] }), {
        idempotency_key: key(),
        purchase_id: '01a1ffb2-0000-7000-8000-000000000000',
        reason: 'x',
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('refunds after the hold', () => {
  const services = useServices({ ECONOMY_HOLD_SECONDS: 0 });

  it('refuses a refund once the hold is over, released or not, and moves nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 200, consumable: true });
    const unreleased = await buy(s, buyer, listing.id);
    const adminCtx = s.ctxFor(asAdmin(admin.user));
    const refund = (purchaseId: string) =>
      s.call('economy.admin.refund', adminCtx, {
        idempotency_key: key(),
        purchase_id: purchaseId,
        reason: 'late',
      });
    const before = await ledgerCounts(s);
    await expect(refund(unreleased.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await ledgerCounts(s)).toEqual(before);
    await s.apis.economy.releaseDue();
    const balance = await s.call('economy.creator.balance', s.ctxFor(seller.user), undefined);
    expect(balance).toMatchObject({ pending: 0, available: 140, next_release_at: null });
    await expect(refund(unreleased.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});
