import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * REST calls of the administration audit tests, and the fixtures the actions act on, built through
 * the API as their owners would build them.
 */
export function adminActionCalls(app: () => TestApp) {
  /** A call that must answer `status`; economy writes get a fresh Idempotency-Key, others ignore it. */
  const expectStatus = async (
    status: number,
    method: Method,
    url: string,
    user: TokenResponse,
    payload?: object,
  ): Promise<LightMyRequestResponse> => {
    const response = await app().http.inject({
      method,
      url,
      headers: { ...bearer(user.access_token), 'idempotency-key': randomUUID() },
      ...(payload === undefined ? {} : { payload }),
    });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBe(status);
    return response;
  };

  /** A published item of a fresh seller's, listed at `price`; answers the seller and the listing's id. */
  const listing = async (price = 100) => {
    const seller = await registerUser(app());
    const item = (
      await expectStatus(201, 'POST', '/api/economy/items', seller, { name: 'Hat', asset_type: 'accessory' })
    ).json();
    await expectStatus(200, 'PATCH', `/api/economy/items/${item.id}`, seller, { state: 'published' });
    const listed = (
      await expectStatus(201, 'POST', '/api/economy/listings', seller, { item_id: item.id, price })
    ).json();
    return { seller, listingId: listed.id as string };
  };

  /** A purchase of a fresh buyer (funded by `admin`) from a fresh seller's listing; answers the seller and the purchase. */
  const purchase = async (admin: TokenResponse, price = 1000) => {
    const { seller, listingId } = await listing(price);
    const buyer = await registerUser(app());
    await expectStatus(201, 'POST', '/api/economy/admin/grants', admin, {
      user_id: buyer.user.id,
      amount: price,
      reason: 'fixture',
    });
    const bought = (
      await expectStatus(201, 'POST', '/api/economy/purchases', buyer, { listing_id: listingId })
    ).json();
    return { seller, purchaseId: bought.id as string };
  };

  /** A payout request of a creator whose one sale (funded by `admin`) is released; answers its id. */
  const payoutRequest = async (admin: TokenResponse) => {
    const { seller } = await purchase(admin);
    await queryRows(
      app().db,
      `update purchases set hold_until = now() - interval '1 second' where seller_id = ?`,
      [seller.user.id],
    );
    const payout = (await expectStatus(201, 'POST', '/api/economy/payouts', seller, { amount: 500 })).json();
    return payout.id as string;
  };

  /** The stored state of a listing. */
  const listingState = async (listingId: string) =>
    (
      await queryRows<{ state: string }>(
        app().db,
        'select state::text as state from marketplace_listings where id = ?',
        [listingId],
      )
    )[0]?.state;

  /** The audit entries of one target as an admin reads them (GET /api/admin/audit), newest first. */
  const auditOf = async (reader: TokenResponse, targetId: string) =>
    (await expectStatus(200, 'GET', `/api/admin/audit?target=${targetId}`, reader)).json().items as {
      actor_kind: string;
      actor_id: string | null;
      action: string;
      target_type: string;
      target_id: string;
    }[];

  return { expectStatus, listing, purchase, payoutRequest, listingState, auditOf };
}
