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

  return { expectStatus, listing, listingState, auditOf };
}
