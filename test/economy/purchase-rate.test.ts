import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { useServices } from '../helpers/services.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { balanceOf, buy, fundedUser, key, ledgerCounts, listedItem } from './economy.js';
import { sent } from './rest.js';

/**
 * Purchases per user and window (ECONOMY_PURCHASE_RATE_LIMIT_COUNT per ..._WINDOW_SECONDS): made
 * small here, so the purchase over the allowance comes quickly. The window is long enough that it
 * never ends during a test.
 */
const LIMITED = { ECONOMY_PURCHASE_RATE_LIMIT_COUNT: 3, ECONOMY_PURCHASE_RATE_LIMIT_WINDOW_SECONDS: 600 };

describe('the purchase rate', () => {
  const services = useServices(LIMITED);

  it('refuses the purchase over the allowance with RATE_LIMITED and a retry time, writing nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { item, listing } = await listedItem(s, seller, { price: 10, consumable: true });
    for (let i = 0; i < 3; i++) await buy(s, buyer, listing.id);
    const before = await ledgerCounts(s);
    const refused = await buy(s, buyer, listing.id).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'RATE_LIMITED' });
    const retryAfter = (refused as { extra: { retryAfterSeconds: number } }).extra.retryAfterSeconds;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await balanceOf(s, buyer)).toBe(970);
    const inventory = await s.call('economy.inventory', s.ctxFor(buyer.user), { item_id: item.id });
    expect(inventory.items[0]?.quantity).toBe(3);
    const after = await s.call('economy.listings.get', s.ctxFor(buyer.user), { listing_id: listing.id });
    expect(after.sold_count).toBe(3);
  });

  it('counts each user’s purchases apart: another buyer still buys while one is limited', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const [limited, other] = [await fundedUser(s, admin, 1000), await fundedUser(s, admin, 1000)];
    const { listing } = await listedItem(s, seller, { price: 10, consumable: true });
    for (let i = 0; i < 3; i++) await buy(s, limited, listing.id);
    await expect(buy(s, limited, listing.id)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    for (let i = 0; i < 3; i++) await buy(s, other, listing.id);
    expect(await balanceOf(s, other)).toBe(970);
  });

  it('replays an acknowledged purchase retried with its key, not RATE_LIMITED, and moves nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 10, consumable: true });
    const lastKey = key();
    await buy(s, buyer, listing.id);
    await buy(s, buyer, listing.id);
    const last = await buy(s, buyer, listing.id, lastKey);
    await expect(buy(s, buyer, listing.id)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    const before = await ledgerCounts(s);
    expect(await buy(s, buyer, listing.id, lastKey)).toEqual(last);
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await balanceOf(s, buyer)).toBe(970);
  });
});

describe('the purchase rate over REST and the socket', () => {
  const app = useTestApp({ ...LIMITED, ECONOMY_PURCHASE_RATE_LIMIT_COUNT: 1 });
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  const entries = async () =>
    (
      await queryRows<{ entries: number; purchases: number; keys: number }>(
        app().db,
        `select (select count(*) from economy_entries)::int as entries, (select count(*) from purchases)::int as purchases,
                (select count(*) from economy_idempotency_keys)::int as keys`,
      )
    )[0];
  const marketWithBuyer = async (): Promise<{ buyer: TokenResponse; listingId: string }> => {
    const admin = await registerWithRole(app(), 'admin');
    const [seller, buyer] = [await registerUser(app()), await registerUser(app())];
    await sent(app(), admin, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.user.id,
      amount: 100,
      reason: 'r',
    });
    const item = await sent(app(), seller, 'POST', '/api/economy/items', {
      name: 'Gem',
      asset_type: 'model',
      consumable: true,
    });
    await sent(app(), seller, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await sent(app(), seller, 'POST', '/api/economy/listings', {
      item_id: item.id,
      price: 10,
    });
    return { buyer, listingId: listing.id };
  };
  const purchase = (buyer: TokenResponse, listingId: string) =>
    app().http.inject({
      method: 'POST',
      url: '/api/economy/purchases',
      headers: { ...bearer(buyer.access_token), 'idempotency-key': randomUUID() },
      payload: { listing_id: listingId },
    });

  it('answers the purchase over the allowance 429 RATE_LIMITED with Retry-After, writing nothing', async () => {
    const { buyer, listingId } = await marketWithBuyer();
    expect((await purchase(buyer, listingId)).statusCode).toBe(201);
    const before = await entries();
    const refused = await purchase(buyer, listingId);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('RATE_LIMITED');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 600).toBe(true);
    expect(await entries()).toEqual(before);
  });

  it('refuses the purchase frame over the allowance with RATE_LIMITED and retry_after, writing nothing', async () => {
    const { buyer, listingId } = await marketWithBuyer();
    const socket = await open(buyer.access_token);
    const buyFrame = () =>
      request(socket, 'economy.purchases.create', { idempotency_key: randomUUID(), listing_id: listingId });
    expect((await buyFrame()).t).toBe('ack');
    const before = await entries();
    const refused = await buyFrame();
    expect(refused).toMatchObject({ t: 'error', code: 'RATE_LIMITED', retry_after: expect.any(Number) });
    expect(await entries()).toEqual(before);
  });
});
