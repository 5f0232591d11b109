import { vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { WebhookDelivery } from '../../protocol/webhooks.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import type { RestName, Row } from './parity-types.js';

/**
 * The webhook rows of the parity table (the app allows private networks): endpoints subscribed to
 * nothing that happens here, except the redelivered one's, whose receiver refuses connections.
 */

type WebhookName = Extract<RestName, `webhooks.${string}`>;

/** Nothing listens on port 1: an attempt fails at once. */
const REFUSING_URL = 'http://127.0.0.1:1/hooks';
const QUIET = { url: 'https://93.184.216.34/hooks', events: ['gameserver.failed' as const] };

export function webhookRows(appOf: () => TestApp): { [N in WebhookName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  const create = async (payload: object): Promise<string> => {
    const response = await appOf().http.inject({
      method: 'POST',
      url: '/api/admin/webhooks',
      headers: bearer((await anAdmin()).access_token),
      payload,
    });
    return (response.json() as { id: string }).id;
  };
  let shared: Promise<string> | undefined;
  const sharedEndpoint = () => {
    shared ??= create({ ...QUIET, description: 'parity' });
    return shared;
  };
  /** A delivery of a fresh endpoint whose first attempt failed, so both runs redeliver alike. */
  const failedOnce = async (): Promise<{ webhook_id: string; delivery_id: string }> => {
    const webhookId = await create({ url: REFUSING_URL, events: ['user.registered'] });
    await registerUser(appOf());
    const token = (await anAdmin()).access_token;
    const delivery = await vi.waitFor(
      async () => {
        const page = await appOf().http.inject({
          method: 'GET',
          url: `/api/admin/webhooks/${webhookId}/deliveries`,
          headers: bearer(token),
        });
        const [first] = (page.json() as { items: WebhookDelivery[] }).items;
        if (!first || first.last_error === null) throw new Error('no failed attempt yet');
        return first;
      },
      { timeout: 30_000, interval: 50 },
    );
    return { webhook_id: webhookId, delivery_id: delivery.id };
  };
  const asAdmin = async () => (await anAdmin()).access_token;
  return {
    'webhooks.admin.create': {
      fresh: true,
      prepare: async () => ({ token: await asAdmin(), input: { ...QUIET, description: 'created' } }),
    },
    'webhooks.admin.list': { prepare: async () => ({ token: await asAdmin(), input: { limit: 5 } }) },
    'webhooks.admin.get': {
      prepare: async () => ({ token: await asAdmin(), input: { webhook_id: await sharedEndpoint() } }),
    },
    'webhooks.admin.update': {
      prepare: async () => ({
        token: await asAdmin(),
        input: { webhook_id: await sharedEndpoint(), description: 'updated' },
      }),
    },
    'webhooks.admin.delete': {
      prepare: async () => ({ token: await asAdmin(), input: { webhook_id: await create(QUIET) } }),
    },
    'webhooks.admin.rotateSecret': {
      prepare: async () => ({ token: await asAdmin(), input: { webhook_id: await sharedEndpoint() } }),
    },
    'webhooks.admin.deliveries': {
      prepare: async () => ({ token: await asAdmin(), input: { webhook_id: await sharedEndpoint() } }),
    },
    'webhooks.admin.redeliver': {
      fresh: true,
      prepare: async () => ({ token: await asAdmin(), input: await failedOnce() }),
    },
  };
}
