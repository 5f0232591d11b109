import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** Fixtures of the economy over REST, for tests of the HTTP answers and of the console. */

/** A write under /api/economy with a fresh Idempotency-Key, expected to succeed; its JSON answer. */
export async function sent(
  app: Pick<TestApp, 'http'>,
  user: TokenResponse,
  method: 'POST' | 'PATCH',
  url: string,
  payload: object,
) {
  const response = await app.http.inject({
    method,
    url,
    headers: { ...bearer(user.access_token), 'idempotency-key': randomUUID() },
    payload,
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
}

/** A creator whose sale of 2000 was released (1400 available) and who asked for a payout of 1000. */
export async function requestedPayout(
  app: TestApp,
  admin: TokenResponse,
): Promise<{ creator: TokenResponse; payoutId: string }> {
  const [creator, buyer] = [await registerUser(app), await registerUser(app)];
  await sent(app, admin, 'POST', '/api/economy/admin/grants', {
    user_id: buyer.user.id,
    amount: 2000,
    reason: 'test grant',
  });
  const item = await sent(app, creator, 'POST', '/api/economy/items', {
    name: 'Cape',
    asset_type: 'clothing',
  });
  await sent(app, creator, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
  const listing = await sent(app, creator, 'POST', '/api/economy/listings', {
    item_id: item.id,
    price: 2000,
  });
  const purchase = await sent(app, buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
  await queryRows(app.db, `update purchases set hold_until = now() - interval '1 second' where id = ?`, [
    purchase.id,
  ]);
  const payout = await sent(app, creator, 'POST', '/api/economy/payouts', { amount: 1000 });
  return { creator, payoutId: payout.id };
}
