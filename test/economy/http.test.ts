import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { requestedPayout } from './rest.js';

/** The economy over REST and the socket: Idempotency-Key semantics, events, the purchase frame. */

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

function client(app: () => TestApp) {
  return async (
    user: TokenResponse,
    method: Method,
    url: string,
    payload?: object,
    idempotencyKey: string | null = randomUUID(),
  ) =>
    app().http.inject({
      method,
      url,
      headers: {
        ...bearer(user.access_token),
        ...(idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey }),
      },
      ...(payload ? { payload } : {}),
    });
}

async function counts(app: TestApp) {
  const rows = await queryRows<{ entries: number; keys: number; items: number }>(
    app.db,
    `select (select count(*) from economy_entries)::int as entries, (select count(*) from economy_idempotency_keys)::int as keys,
            (select count(*) from catalog_items)::int as items`,
  );
  return rows[0];
}

// One app for the file: its parts need the same settings, and each test makes its own users.
const app = useTestApp();

describe('Idempotency-Key on economy writes', () => {
  const send = client(app);

  it.each([
    ['missing', null],
    ['empty', ''],
    ['over 255 characters', 'k'.repeat(256)],
    ['not visible ASCII', 'a key'],
  ])(
    'refuses a write whose key is %s with 422 naming headers.idempotency-key, writing nothing',
    async (_n, header) => {
      const user = await registerUser(app());
      const before = await counts(app());
      const response = await send(
        user,
        'POST',
        '/api/economy/items',
        { name: 'Hat', asset_type: 'emote' },
        header,
      );
      expect(response.statusCode).toBe(422);
      const problem = response.json();
      expect(problem.code).toBe('VALIDATION_FAILED');
      expect(new Set(problem.errors.map((e: { path: string }) => e.path))).toEqual(
        new Set(['headers.idempotency-key']),
      );
      expect(await counts(app())).toEqual(before);
    },
  );

  it('replays the stored answer for a retry with Idempotent-Replayed: true, and does nothing again', async () => {
    const user = await registerUser(app());
    const key = randomUUID();
    const first = await send(user, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' }, key);
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const before = await counts(app());
    const retry = await send(user, 'POST', '/api/economy/items', { asset_type: 'emote', name: 'Hat' }, key);
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect(await counts(app())).toEqual(before);
  });

  it('keeps keys per caller: another user with the same key makes their own', async () => {
    const [a, b] = [await registerUser(app()), await registerUser(app())];
    const key = randomUUID();
    const first = await send(a, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' }, key);
    const second = await send(b, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' }, key);
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.json().id).not.toBe(first.json().id);
  });

  it('answers the same key with another body, or another path, 422 IDEMPOTENCY_KEY_REUSED, doing nothing', async () => {
    const user = await registerUser(app());
    const key = randomUUID();
    const item = (
      await send(user, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' }, key)
    ).json();
    const before = await counts(app());
    const otherBody = await send(
      user,
      'POST',
      '/api/economy/items',
      { name: 'Cap', asset_type: 'emote' },
      key,
    );
    expect(otherBody.statusCode).toBe(422);
    expect(otherBody.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    const otherPath = await send(user, 'PATCH', `/api/economy/items/${item.id}`, { name: 'Hat' }, key);
    expect(otherPath.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await counts(app())).toEqual(before);
  });

  it('stores nothing for a refusal: a retry with the key runs afresh', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const user = await registerUser(app());
    const key = randomUUID();
    const listing = { item_id: '01a1ffb2-0000-7000-8000-000000000000', price: 10 };
    expect((await send(user, 'POST', '/api/economy/listings', listing, key)).statusCode).toBe(404);
    const grant = { user_id: user.user.id, amount: 10, reason: 'x' };
    expect((await send(user, 'POST', '/api/economy/admin/grants', grant, key)).statusCode).toBe(403);
    const granted = await send(admin, 'POST', '/api/economy/admin/grants', grant, key);
    expect(granted.statusCode).toBe(201);
  });

  it('executes 10 concurrent requests with one key once, and answers the others with the replay', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const user = await registerUser(app());
    const key = randomUUID();
    const grant = { user_id: user.user.id, amount: 7, reason: 'race' };
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => send(admin, 'POST', '/api/economy/admin/grants', grant, key)),
    );
    for (const answer of answers) {
      // Waiting for the original is allowed to end as 409 IDEMPOTENCY_KEY_IN_USE; never as a second grant.
      expect([201, 409]).toContain(answer.statusCode);
      if (answer.statusCode === 409) expect(answer.json().code).toBe('IDEMPOTENCY_KEY_IN_USE');
    }
    const created = answers.filter((a) => a.statusCode === 201);
    expect(new Set(created.map((a) => a.json().transaction_id)).size).toBe(1);
    expect(created.filter((a) => a.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    const wallet = await send(user, 'GET', '/api/economy/wallet', undefined, null);
    expect(wallet.json().balance).toBe(7);
  });

  it('ignores the key on GET and DELETE', async () => {
    const user = await registerUser(app());
    const response = await send(user, 'GET', '/api/economy/wallet', undefined, 'not checked here');
    expect(response.statusCode).toBe(200);
  });
});

describe('admin routes', () => {
  const send = client(app);

  it('checks the body before the role: 422 for a bad body, then 403 for a moderator', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const bad = await send(moderator, 'POST', '/api/economy/admin/grants', {
      user_id: 'x',
      amount: 0,
      reason: 'r',
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors).toEqual([expect.objectContaining({ path: 'body.amount' })]);
    const good = await send(moderator, 'POST', '/api/economy/admin/grants', {
      user_id: moderator.user.id,
      amount: 1,
      reason: 'r',
    });
    expect(good.statusCode).toBe(403);
    expect(good.json().code).toBe('FORBIDDEN');
  });

  it('refuses a payout decision without expected_state with 422 naming body.expected_state, moving nothing', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const { payoutId } = await requestedPayout(app(), admin);
    const before = await counts(app());
    const response = await send(admin, 'PATCH', `/api/economy/admin/payouts/${payoutId}`, {
      state: 'approved',
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().code).toBe('VALIDATION_FAILED');
    expect(response.json().errors).toEqual([expect.objectContaining({ path: 'body.expected_state' })]);
    expect(await counts(app())).toEqual(before);
    const payout = await send(admin, 'GET', `/api/economy/payouts/${payoutId}`, undefined, null);
    expect(payout.json().state).toBe('requested');
  });

  it('answers a payout decision from a state the payout left 409 CONFLICT with current_state in the body, moving nothing', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const { payoutId } = await requestedPayout(app(), admin);
    const url = `/api/economy/admin/payouts/${payoutId}`;
    expect(
      (await send(admin, 'PATCH', url, { state: 'approved', expected_state: 'requested' })).statusCode,
    ).toBe(200);
    const before = await counts(app());
    const stale = await send(admin, 'PATCH', url, { state: 'rejected', expected_state: 'requested' });
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({ code: 'CONFLICT', current_state: 'approved' });
    expect(await counts(app())).toEqual(before);
  });

  it.each([0, -5, 1.5, '10', 1_000_000_000_001])(
    'refuses the amount %j with 422 naming body.amount',
    async (amount) => {
      const admin = await registerWithRole(app(), 'admin');
      const response = await send(admin, 'POST', '/api/economy/admin/grants', {
        user_id: admin.user.id,
        amount,
        reason: 'r',
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().errors).toEqual([expect.objectContaining({ path: 'body.amount' })]);
    },
  );
});

describe('economy events and frames', () => {
  const send = client(app);
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  it('buys over the socket and tells the buyer economy.balance and the seller economy.sale and economy.balance', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const [seller, buyer] = [await registerUser(app()), await registerUser(app())];
    expect(
      (
        await send(admin, 'POST', '/api/economy/admin/grants', {
          user_id: buyer.user.id,
          amount: 100,
          reason: 'r',
        })
      ).statusCode,
    ).toBe(201);
    const item = (
      await send(seller, 'POST', '/api/economy/items', { name: 'Hat', asset_type: 'emote' })
    ).json();
    await send(seller, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = (
      await send(seller, 'POST', '/api/economy/listings', { item_id: item.id, price: 40 })
    ).json();
    const [buyerSocket, sellerSocket] = await Promise.all([
      open(buyer.access_token),
      open(seller.access_token),
    ]);
    const ack = await request(buyerSocket, 'economy.purchases.create', {
      idempotency_key: randomUUID(),
      listing_id: listing.id,
    });
    expect(ack.t).toBe('ack');
    const purchase = ack.d as { id: string; transaction_id: string };
    const balance = await buyerSocket.next((f) => f.t === 'economy.balance');
    expect(balance.d).toEqual({ account: 'wallet', balance: 60, transaction_id: purchase.transaction_id });
    const sale = await sellerSocket.next((f) => f.t === 'economy.sale');
    expect(sale.d).toMatchObject({ id: purchase.id, seller_amount: 28 });
    const pending = await sellerSocket.next((f) => f.t === 'economy.balance');
    expect(pending.d).toEqual({
      account: 'creator_pending',
      balance: 28,
      transaction_id: purchase.transaction_id,
    });
    const wallet = await request(buyerSocket, 'economy.wallet');
    expect(wallet.d).toMatchObject({ balance: 60 });
  });

  it('refuses a purchase frame without an idempotency_key as invalid', async () => {
    const user = await registerUser(app());
    const socket = await open(user.access_token);
    const reply = await request(socket, 'economy.purchases.create', {
      listing_id: '01a1ffb2-0000-7000-8000-000000000000',
    });
    expect(reply).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
  });
});
