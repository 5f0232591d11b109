import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { TransactionEntry } from '../../protocol/economy.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { sent } from './rest.js';

/** Who sees what of a purchase's transaction, over REST and over the socket. */

describe('a transaction as each of its readers sees it', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  let admin: TokenResponse;
  let buyer: TokenResponse;
  let seller: TokenResponse;
  let transactionId: string;

  const send = (user: TokenResponse, method: 'POST' | 'PATCH', url: string, payload: object) =>
    sent(app(), user, method, url, payload);
  const viaRest = async (user: TokenResponse) => {
    const response = await app().http.inject({
      method: 'GET',
      url: `/api/economy/transactions/${transactionId}`,
      headers: bearer(user.access_token),
    });
    return { status: response.statusCode, body: response.json() };
  };
  const viaSocket = async (user: TokenResponse) => {
    const socket = await open(user.access_token);
    return request(socket, 'economy.transaction', { transaction_id: transactionId });
  };
  const byAccount = (entries: TransactionEntry[]) =>
    Object.fromEntries(
      entries.map((e) => [e.account, { user_id: e.user_id, balance_after: e.balance_after }]),
    );

  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
    [buyer, seller] = [await registerUser(app()), await registerUser(app())];
    await send(admin, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.user.id,
      amount: 1000,
      reason: 'r',
    });
    const item = await send(seller, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' });
    await send(seller, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await send(seller, 'POST', '/api/economy/listings', { item_id: item.id, price: 100 });
    const purchase = await send(buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
    transactionId = purchase.transaction_id;
  });

  it("shows the buyer their own wallet entry's owner and balance, and neither on the seller's and the platform's", async () => {
    const rest = await viaRest(buyer);
    expect(rest.status).toBe(200);
    const expected = {
      wallet: { user_id: buyer.user.id, balance_after: 900 },
      creator_pending: { user_id: null, balance_after: null },
      platform_revenue: { user_id: null, balance_after: null },
    };
    expect(byAccount(rest.body.entries)).toEqual(expected);
    expect(rest.body.entries.map((e: TransactionEntry) => [e.account, e.kind, e.amount]).sort()).toEqual(
      [
        ['creator_pending', 'sale', 70],
        ['platform_revenue', 'fee', 30],
        ['wallet', 'purchase', -100],
      ].sort(),
    );
    const frame = await viaSocket(buyer);
    expect(frame.t).toBe('ack');
    expect(frame.d).toEqual(rest.body);
  });

  it("shows the seller their own pending entry's owner and balance, and neither on the buyer's and the platform's", async () => {
    const rest = await viaRest(seller);
    expect(rest.status).toBe(200);
    expect(byAccount(rest.body.entries)).toEqual({
      wallet: { user_id: null, balance_after: null },
      creator_pending: { user_id: seller.user.id, balance_after: 70 },
      platform_revenue: { user_id: null, balance_after: null },
    });
    const frame = await viaSocket(seller);
    expect(frame.d).toEqual(rest.body);
  });

  it('shows an admin every owner and every balance, the platform revenue included', async () => {
    const rest = await viaRest(admin);
    expect(rest.status).toBe(200);
    expect(byAccount(rest.body.entries)).toEqual({
      wallet: { user_id: buyer.user.id, balance_after: 900 },
      creator_pending: { user_id: seller.user.id, balance_after: 70 },
      // The file's database is a fresh clone: this fee is the platform's first revenue.
      platform_revenue: { user_id: null, balance_after: 30 },
    });
    const frame = await viaSocket(admin);
    expect(frame.d).toEqual(rest.body);
  });

  it('answers a user who owns none of its accounts 404 NOT_FOUND', async () => {
    const stranger = await registerUser(app());
    const rest = await viaRest(stranger);
    expect(rest.status).toBe(404);
    expect(rest.body.code).toBe('NOT_FOUND');
    const frame = await viaSocket(stranger);
    expect(frame).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
  });
});
