import { describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { rowLockWaiters } from '../helpers/database.js';
import type { Services, ServiceUser } from '../helpers/services.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, buy, fundedUser, key, listedItem } from './economy.js';

const createItem = (s: Services, creator: ServiceUser, name = 'Hat') =>
  s.call('economy.items.create', s.ctxFor(creator.user), {
    idempotency_key: key(),
    name,
    asset_type: 'accessory',
  });
const moveItem = (s: Services, user: ServiceUser, itemId: string, state: 'draft' | 'published' | 'retired') =>
  s.call('economy.items.update', s.ctxFor(user.user), { idempotency_key: key(), item_id: itemId, state });

describe('catalog items', () => {
  const services = useServices();

  it('creates a draft that only its creator and admins can see', async () => {
    const s = services();
    const creator = await s.createUser();
    const other = await s.createUser();
    const item = await createItem(s, creator);
    expect(item).toMatchObject({
      creator_id: creator.user.id,
      state: 'draft',
      consumable: false,
      asset_id: null,
      published_at: null,
    });
    expect((await s.call('economy.items.get', s.ctxFor(creator.user), { item_id: item.id })).id).toBe(
      item.id,
    );
    expect((await s.call('economy.items.get', s.ctxFor(asAdmin(other.user)), { item_id: item.id })).id).toBe(
      item.id,
    );
    await expect(
      s.call('economy.items.get', s.ctxFor(other.user), { item_id: item.id }),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const theirs = await s.call('economy.items.list', s.ctxFor(other.user), { creator_id: creator.user.id });
    expect(theirs.items).toEqual([]);
    const mine = await s.call('economy.items.list', s.ctxFor(creator.user), { creator_id: creator.user.id });
    expect(mine.items.map((i) => i.id)).toEqual([item.id]);
  });

  it('moves draft -> published -> retired and refuses every other move with CONFLICT and current_state', async () => {
    const s = services();
    const creator = await s.createUser();
    const item = await createItem(s, creator);
    await expect(moveItem(s, creator, item.id, 'draft')).resolves.toMatchObject({ state: 'draft' });
    const published = await moveItem(s, creator, item.id, 'published');
    expect(published.published_at).not.toBeNull();
    await expect(moveItem(s, creator, item.id, 'draft')).rejects.toMatchObject({
      code: 'CONFLICT',
      extra: { details: { current_state: 'published' } },
    });
    await moveItem(s, creator, item.id, 'retired');
    for (const state of ['draft', 'published'] as const) {
      await expect(moveItem(s, creator, item.id, state)).rejects.toMatchObject({
        code: 'CONFLICT',
        extra: { details: { current_state: 'retired' } },
      });
    }
    const draft = await createItem(s, creator);
    await expect(moveItem(s, creator, draft.id, 'retired')).resolves.toMatchObject({ state: 'retired' });
  });

  it("refuses edits by anyone but the creator with FORBIDDEN (an admin too), and another's draft with NOT_FOUND", async () => {
    const s = services();
    const creator = await s.createUser();
    const other = await s.createUser();
    const item = await moveItem(s, creator, (await createItem(s, creator)).id, 'published');
    await expect(moveItem(s, other, item.id, 'retired')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      s.call('economy.items.update', s.ctxFor(asAdmin(other.user)), {
        idempotency_key: key(),
        item_id: item.id,
        name: 'x',
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const draft = await createItem(s, creator);
    await expect(moveItem(s, other, draft.id, 'published')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lists only published items of the caller by default filters, newest first, in keyset pages', async () => {
    const s = services();
    const creator = await s.createUser();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await moveItem(s, creator, (await createItem(s, creator)).id, 'published')).id);
    const first = await s.call('economy.items.list', s.ctxFor(creator.user), {
      creator_id: creator.user.id,
      limit: 2,
    });
    expect(first.items.map((i) => i.id)).toEqual([ids[2], ids[1]]);
    const second = await s.call('economy.items.list', s.ctxFor(creator.user), {
      creator_id: creator.user.id,
      limit: 2,
      cursor: first.next_cursor as string,
    });
    expect(second.items.map((i) => i.id)).toEqual([ids[0]]);
    expect(second.next_cursor).toBeNull();
  });

  it('retiring an item cancels its listings; owners keep it', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await s.createUser();
    const buyer = await fundedUser(s, admin, 100);
    const { item, listing } = await listedItem(s, creator, { price: 10 });
    await buy(s, buyer, listing.id);
    await moveItem(s, creator, item.id, 'retired');
    const after = await s.call('economy.listings.get', s.ctxFor(buyer.user), { listing_id: listing.id });
    expect(after.state).toBe('cancelled');
    const inventory = await s.call('economy.inventory', s.ctxFor(buyer.user), {});
    expect(inventory.items).toEqual([
      expect.objectContaining({ item_id: item.id, item: expect.objectContaining({ state: 'retired' }) }),
    ]);
  });

  // A purchase locks its listing, then its rows' foreign keys take a key-share lock on the item;
  // retiring locks the item, then cancels its listings. The item's lock must not refuse key-share
  // locks, or the two wait on each other (found by the economy simulation, seed 1 step 580).
  // PGlite runs one session, so only Postgres can interleave them.
  it.runIf(process.env.DATABASE_URL)(
    'retires an item while a purchase holds its listing without a deadlock: the purchase still records rows naming the item',
    async () => {
      const s = services();
      const creator = await s.createUser();
      const { item, listing } = await listedItem(s, creator, { price: 10 });
      let reachItem: () => void = () => undefined;
      const retireWaits = new Promise<void>((resolve) => {
        reachItem = resolve;
      });
      // The purchase's order of locks, held open in a transaction of the test's.
      const purchase = transaction(s.db.data, async (tx) => {
        await executeBound(tx, 'select 1 from marketplace_listings where id = $1 for update', [listing.id]);
        await retireWaits;
        await executeBound(tx, 'select 1 from catalog_items where id = $1 for key share', [item.id]);
      });
      const retired = moveItem(s, creator, item.id, 'retired');
      await expect.poll(() => rowLockWaiters(s.db), { timeout: 30_000 }).toBeGreaterThan(0);
      reachItem();
      const [purchased, retiring] = await Promise.allSettled([purchase, retired]);
      expect(purchased).toEqual({ status: 'fulfilled', value: undefined });
      expect(retiring).toMatchObject({ status: 'fulfilled', value: { state: 'retired' } });
      const after = await s.call('economy.listings.get', s.ctxFor(creator.user), { listing_id: listing.id });
      expect(after.state).toBe('cancelled');
    },
  );
});

describe('listings', () => {
  const services = useServices();

  it("refuses a listing of someone else's item (403) and of an unpublished one (409)", async () => {
    const s = services();
    const creator = await s.createUser();
    const other = await s.createUser();
    const draft = await createItem(s, creator);
    const list = (user: ServiceUser, itemId: string) =>
      s.call('economy.listings.create', s.ctxFor(user.user), {
        idempotency_key: key(),
        item_id: itemId,
        price: 5,
      });
    await expect(list(creator, draft.id)).rejects.toMatchObject({
      code: 'CONFLICT',
      extra: { details: { current_state: 'draft' } },
    });
    const published = await moveItem(s, creator, draft.id, 'published');
    await expect(list(other, published.id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(list(creator, published.id)).resolves.toMatchObject({
      state: 'active',
      sold_count: 0,
      quantity: null,
    });
  });

  it('cancels a listing for its seller or an admin (again: done), refusing anyone else', async () => {
    const s = services();
    const seller = await s.createUser();
    const other = await s.createUser();
    const { listing } = await listedItem(s, seller, { price: 5 });
    const cancel = (user: ServiceUser, admin = false) =>
      s.call('economy.listings.cancel', s.ctxFor(admin ? asAdmin(user.user) : user.user), {
        listing_id: listing.id,
      });
    await expect(cancel(other)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await cancel(other, true);
    await cancel(seller);
    const active = await s.call('economy.listings.list', s.ctxFor(other.user), { seller_id: seller.user.id });
    expect(active.items).toEqual([]);
  });
});

describe('deleting a user', () => {
  const services = useServices();

  it('keeps their money history as tombstones, retires their items and cancels their listings', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 100);
    const { item, listing } = await listedItem(s, seller, { price: 50 });
    const purchase = await buy(s, buyer, listing.id);
    const second = await listedItem(s, seller, { price: 10 });
    await s.call('users.deleteMe', s.ctxFor(seller.user), { password: seller.password });
    const viewer = buyer.user;
    expect(await s.call('economy.items.get', s.ctxFor(viewer), { item_id: item.id })).toMatchObject({
      creator_id: null,
      state: 'retired',
    });
    expect(
      await s.call('economy.listings.get', s.ctxFor(viewer), { listing_id: second.listing.id }),
    ).toMatchObject({
      seller_id: null,
      state: 'cancelled',
    });
    expect(
      await s.call('economy.purchases.get', s.ctxFor(viewer), { purchase_id: purchase.id }),
    ).toMatchObject({
      seller_id: null,
      state: 'completed',
    });
    const tx = await s.call('economy.transaction', s.ctxFor(viewer), {
      transaction_id: purchase.transaction_id,
    });
    expect(tx.entries.find((e) => e.account === 'creator_pending')).toMatchObject({
      user_id: null,
      amount: 35,
    });
    const [orphans] = await executeBound<{ n: string }>(
      s.db.data,
      `select count(*)::text as n from economy_accounts where user_id is null and kind::text not like 'platform%'`,
      [],
    );
    expect(Number(orphans?.n)).toBeGreaterThanOrEqual(2);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});
