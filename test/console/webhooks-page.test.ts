import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { type WebhookDelivery, type WebhookEndpoint, webhookEventTypes } from '../../protocol/webhooks.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { type ReceivedHook, webhookReceiver } from '../helpers/webhook-receiver.js';
import { ConsoleClient } from './console-client.js';

/** A documentation address (TEST-NET-3) the address rules accept; nothing listens there. */
const HOOK_URL = 'https://203.0.113.10/hooks';
/** An event nothing in these tests causes, so endpoints on HOOK_URL never get a delivery. */
const QUIET_EVENT = 'gameserver.failed';

/** The text of the flash a page shows after a form, or undefined without one. */
const flashOf = (page: string) => /class="flash (?:notice|error)" role="\w+">([^<]*)</.exec(page)?.[1];
/** The secret a page shows, if any. */
const secretIn = (page: string) => /<code>(whsec_[A-Za-z0-9+/=]+)<\/code>/.exec(page)?.[1];
/** The links to endpoint pages in a list page, in order. */
const endpointLinks = (page: string) =>
  [...page.matchAll(/<a href="\/console\/webhooks\/([^"/]+)"><code>/g)].map((match) => match[1]);

/** An app's admin, signed in to the console, and calls of the API as them. */
function adminOf(app: () => TestApp) {
  const { expectStatus } = callsAs(app);
  const state = {} as { tokens: TokenResponse; browser: ConsoleClient };
  beforeAll(async () => {
    state.tokens = await registerWithRole(app(), 'admin');
    state.browser = await new ConsoleClient(app()).signedIn(state.tokens.user.username);
  });
  const api = {
    endpoints: async () =>
      (await expectStatus(200, 'GET', '/api/admin/webhooks?limit=100', state.tokens)).json()
        .items as WebhookEndpoint[],
    endpoint: (id: string) => expectStatus(200, 'GET', `/api/admin/webhooks/${id}`, state.tokens),
    create: async (body: object = { url: HOOK_URL, events: [QUIET_EVENT] }) =>
      (await expectStatus(201, 'POST', '/api/admin/webhooks', state.tokens, body)).json() as WebhookEndpoint,
    removeAll: async () => {
      for (const { id } of await api.endpoints()) {
        await expectStatus(204, 'DELETE', `/api/admin/webhooks/${id}`, state.tokens);
      }
    },
  };
  return { state, api, expectStatus };
}

/**
 * The console's webhooks pages over inject: endpoints listed, added (the secret shown once, in the
 * page answering the form), enabled and disabled, rotated, deleted; their delivery logs by status
 * with redelivery; and the API's refusals shown as every console form shows them.
 */
describe('the console’s webhooks pages', () => {
  describe('endpoints', () => {
    const app = useTestApp({ WEBHOOK_MAX_ENDPOINTS: 21 });
    const { state, api } = adminOf(app);
    const browser = () => state.browser;
    afterEach(() => api.removeAll());

    it('adds an endpoint through the form and shows its secret in the page answering it, and on no page after', async () => {
      const form = await browser().get('/console/webhooks');
      expect(form.statusCode).toBe(200);
      expect(form.body).toContain('action="/console/webhooks/create"');
      for (const type of ['*', ...webhookEventTypes]) {
        expect(form.body).toContain(`<input type="checkbox" name="event:${type}" value="yes">`);
      }
      const added = await browser().post('/console/webhooks/create', {
        url: HOOK_URL,
        [`event:${QUIET_EVENT}`]: 'yes',
        description: 'Pager <ops>',
      });
      expect(added.statusCode).toBe(200);
      expect(added.headers['cache-control']).toBe('no-store');
      expect(added.body).toContain('<h1>Webhook endpoint added</h1>');
      const secret = secretIn(added.body);
      expect(secret).toMatch(/^whsec_/);
      const [endpoint] = await api.endpoints();
      expect(endpoint).toMatchObject({
        url: HOOK_URL,
        events: [QUIET_EVENT],
        enabled: true,
        description: 'Pager <ops>',
      });
      expect(added.body).toContain(`href="/console/webhooks/${endpoint?.id}"`);
      for (const path of ['/console/webhooks', `/console/webhooks/${endpoint?.id}`, '/console']) {
        const page = await browser().get(path);
        expect(page.statusCode, path).toBe(200);
        expect(page.body, path).not.toContain(secret);
        expect(flashOf(page.body), path).toBeUndefined();
      }
      const list = (await browser().get('/console/webhooks')).body;
      expect(endpointLinks(list)).toEqual([endpoint?.id]);
      expect(list).toContain('Pager &lt;ops&gt;');
    });

    it('subscribes to the ticked events of the catalogue, or to * alone when it is ticked', async () => {
      await browser().post('/console/webhooks/create', {
        url: `${HOOK_URL}/named`,
        'event:group.created': 'yes',
        'event:user.registered': 'yes',
      });
      await browser().post('/console/webhooks/create', {
        url: `${HOOK_URL}/every`,
        'event:*': 'yes',
        'event:user.deleted': 'yes',
      });
      const byUrl = Object.fromEntries((await api.endpoints()).map((endpoint) => [endpoint.url, endpoint]));
      expect(byUrl[`${HOOK_URL}/named`]?.events).toEqual(['user.registered', 'group.created']);
      expect(byUrl[`${HOOK_URL}/every`]?.events).toEqual(['*']);
      expect((await browser().get('/console/webhooks')).body).toContain(
        '* (every event, later ones included)',
      );
    });

    it('lists the endpoints newest first, 20 a page, with a link to the next page', async () => {
      const made: string[] = [];
      for (let i = 0; i < 21; i++)
        made.push((await api.create({ url: `${HOOK_URL}/${i}`, events: [QUIET_EVENT] })).id);
      const first = (await browser().get('/console/webhooks')).body;
      expect(endpointLinks(first)).toEqual(made.slice(1).reverse());
      const next = /<a href="(\/console\/webhooks\?cursor=[^"]+)" rel="next">Next page<\/a>/.exec(first)?.[1];
      expect(next).toBeDefined();
      const second = (await browser().get((next as string).replaceAll('&amp;', '&'))).body;
      expect(endpointLinks(second)).toEqual([made[0]]);
      expect(second).not.toContain('rel="next"');
    });

    it('shows a refused address and no event as the API’s 422 naming the fields, one past the limit as its 409, and adds nothing', async () => {
      const refusal = async (fields: Record<string, string>) => {
        const answer = await browser().post('/console/webhooks/create', fields);
        expect([answer.statusCode, answer.headers.location]).toEqual([303, '/console/webhooks']);
        const page = await browser().get('/console/webhooks');
        expect(page.body).toContain('class="flash error" role="alert"');
        expect(secretIn(page.body)).toBeUndefined();
        return flashOf(page.body);
      };
      expect(await refusal({ url: 'https://10.0.0.7/hooks', [`event:${QUIET_EVENT}`]: 'yes' })).toMatch(
        /^Unprocessable Content: .*\(body\.url names 10\.0\.0\.7/,
      );
      expect(await refusal({ url: HOOK_URL })).toMatch(/^Unprocessable Content: .*\(body\.events /);
      expect(await api.endpoints()).toEqual([]);
      for (let i = 0; i < 21; i++) await api.create({ url: `${HOOK_URL}/${i}`, events: [QUIET_EVENT] });
      expect(await refusal({ url: `${HOOK_URL}/one-more`, [`event:${QUIET_EVENT}`]: 'yes' })).toMatch(
        /^Conflict: At most 21 webhook endpoints\./,
      );
      expect(await api.endpoints()).toHaveLength(21);
    });

    it('disables and enables an endpoint from its page', async () => {
      const { id } = await api.create();
      const page = (await browser().get(`/console/webhooks/${id}`)).body;
      expect(page).toContain(`<dd><code>${id}</code></dd>`);
      expect(page).toContain('>Disable</button>');
      const disabled = await browser().post(`/console/webhooks/${id}/enabled`, { enabled: 'no' });
      expect([disabled.statusCode, disabled.headers.location]).toEqual([303, `/console/webhooks/${id}`]);
      expect((await api.endpoint(id)).json().enabled).toBe(false);
      const after = (await browser().get(`/console/webhooks/${id}`)).body;
      expect(flashOf(after)).toBe('Endpoint disabled: it gets no deliveries until it is enabled again.');
      expect(after).toContain('>Enable</button>');
      await browser().post(`/console/webhooks/${id}/enabled`, { enabled: 'yes' });
      expect((await api.endpoint(id)).json().enabled).toBe(true);
      expect(flashOf((await browser().get(`/console/webhooks/${id}`)).body)).toMatch(/^Endpoint enabled/);
    });

    it('rotates the secret, showing the new one in the page answering the form only', async () => {
      const added = await browser().post('/console/webhooks/create', {
        url: HOOK_URL,
        [`event:${QUIET_EVENT}`]: 'yes',
      });
      const [{ id } = { id: '' }] = await api.endpoints();
      const rotated = await browser().post(`/console/webhooks/${id}/rotate-secret`, {});
      expect(rotated.statusCode).toBe(200);
      expect(rotated.body).toContain('<h1>Webhook secret rotated</h1>');
      const secret = secretIn(rotated.body);
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(secretIn(added.body));
      expect(rotated.body).toContain(`href="/console/webhooks/${id}"`);
      const page = (await browser().get(`/console/webhooks/${id}`)).body;
      expect(page).not.toContain(secret);
      expect(flashOf(page)).toBeUndefined();
    });

    it('deletes an endpoint only once its box is ticked, then goes back to the list', async () => {
      const { id } = await api.create();
      const unticked = await browser().post(`/console/webhooks/${id}/delete`, {});
      expect([unticked.statusCode, unticked.headers.location]).toEqual([303, `/console/webhooks/${id}`]);
      expect(flashOf((await browser().get(`/console/webhooks/${id}`)).body)).toBe(
        'Nothing was deleted: tick the box to confirm the deletion first.',
      );
      await api.endpoint(id);
      const deleted = await browser().post(`/console/webhooks/${id}/delete`, { confirm: 'yes' });
      expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/console/webhooks']);
      expect(flashOf((await browser().get('/console/webhooks')).body)).toBe(
        'Endpoint deleted, with its pending deliveries.',
      );
      expect(await api.endpoints()).toEqual([]);
      const gone = await browser().get(`/console/webhooks/${id}`);
      expect(gone.statusCode).toBe(200);
      expect(gone.body).toMatch(/class="problem" role="alert">[\s\S]*404 NOT_FOUND/);
    });

    it('refuses a moderator the pages and forms with a 403 page, changes nothing, and leaves them out of the navigation', async () => {
      const { id } = await api.create();
      const moderator = await registerWithRole(app(), 'moderator');
      const mod = await new ConsoleClient(app()).signedIn(moderator.user.username);
      for (const path of ['/console/webhooks', `/console/webhooks/${id}`]) {
        const page = await mod.get(path);
        expect(page.statusCode, path).toBe(403);
        expect(page.body).toContain('Your roles do not open this page.');
      }
      expect((await mod.get('/console')).body).not.toContain('href="/console/webhooks"');
      for (const [path, fields] of [
        ['/console/webhooks/create', { url: `${HOOK_URL}/sneaky`, [`event:${QUIET_EVENT}`]: 'yes' }],
        [`/console/webhooks/${id}/enabled`, { enabled: 'no' }],
        [`/console/webhooks/${id}/rotate-secret`, {}],
        [`/console/webhooks/${id}/delete`, { confirm: 'yes' }],
      ] as const) {
        const refused = await mod.post(path, fields);
        expect(refused.statusCode, path).toBe(403);
        expect(secretIn(refused.body)).toBeUndefined();
      }
      expect(await api.endpoints()).toMatchObject([{ id, url: HOOK_URL, enabled: true }]);
      expect((await browser().get('/console/webhooks')).body).toContain(
        'href="/console/webhooks" aria-current="page"',
      );
    });
  });

  describe('delivery log', () => {
    const app = useTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, WEBHOOK_MAX_ATTEMPTS: 1 });
    const { state, api } = adminOf(app);
    const browser = () => state.browser;
    /** Status sequences per receiver path; the last one repeats. */
    const plans = new Map<string, number[]>();
    let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
    beforeAll(async () => {
      receiver = await webhookReceiver((path, n) => {
        const plan = plans.get(path) ?? [204];
        return plan[Math.min(n, plan.length) - 1] ?? 204;
      });
    });
    afterAll(() => receiver.close());
    afterEach(() => api.removeAll());

    /** An endpoint added through the console on its own receiver path, with the secret its page showed. */
    const added = async (plan: number[] = [204]) => {
      const path = `/hooks/${randomUUID()}`;
      plans.set(path, plan);
      const answer = await browser().post('/console/webhooks/create', {
        url: receiver.url(path),
        'event:user.registered': 'yes',
      });
      expect(answer.statusCode, answer.body).toBe(200);
      const endpoint = (await api.endpoints()).find((one) => one.url === receiver.url(path));
      return { id: endpoint?.id as string, path, secret: secretIn(answer.body) as string };
    };
    const deliveries = async (id: string) =>
      (
        await app().http.inject({
          method: 'GET',
          url: `/api/admin/webhooks/${id}/deliveries?limit=100`,
          headers: { authorization: `Bearer ${state.tokens.access_token}` },
        })
      ).json().items as WebhookDelivery[];
    /** Waits for the endpoint's deliveries to pass `check` (a poll with a generous deadline). */
    const untilDeliveries = (id: string, check: (items: WebhookDelivery[]) => boolean) =>
      vi.waitFor(
        async () => {
          const items = await deliveries(id);
          if (!check(items)) throw new Error(`deliveries so far: ${JSON.stringify(items)}`);
          return items;
        },
        { timeout: 30_000, interval: 50 },
      );
    const verified = (hook: ReceivedHook | undefined, secret: string) =>
      new Webhook(secret).verify(hook?.body ?? '', (hook?.headers ?? {}) as Record<string, string>);
    /** The delivery ids of an endpoint page's log, in order. */
    const loggedIds = (page: string) =>
      [...page.matchAll(/<tr><td><code class="id">([^<]+)<\/code><\/td>/g)].map((match) => match[1]);

    it('shows the deliveries by status and redelivers one with the button, signed with the secret the page showed', async () => {
      const endpoint = await added([500, 204]);
      await registerUser(app());
      const [failed] = await untilDeliveries(endpoint.id, (items) => items[0]?.status === 'failed');
      const page = (await browser().get(`/console/webhooks/${endpoint.id}`)).body;
      expect(loggedIds(page)).toEqual([failed?.id]);
      expect(page).toContain('<td>failed</td>');
      expect(page).toContain('500<br><small>refused with 500</small>');
      expect(page).toContain(`action="/console/webhooks/${endpoint.id}/deliveries/${failed?.id}/redeliver"`);
      expect(loggedIds((await browser().get(`/console/webhooks/${endpoint.id}?status=failed`)).body)).toEqual(
        [failed?.id],
      );
      const none = (await browser().get(`/console/webhooks/${endpoint.id}?status=delivered`)).body;
      expect(loggedIds(none)).toEqual([]);
      expect(none).toContain('Deliveries, newest first: nothing to show.');
      expect(none).toContain('<option value="delivered" selected>');

      const again = await browser().post(
        `/console/webhooks/${endpoint.id}/deliveries/${failed?.id}/redeliver`,
        {},
      );
      expect([again.statusCode, again.headers.location]).toEqual([303, `/console/webhooks/${endpoint.id}`]);
      expect(flashOf((await browser().get(`/console/webhooks/${endpoint.id}`)).body)).toBe(
        `Delivery ${failed?.id} is due again now, with a fresh budget of attempts.`,
      );
      await untilDeliveries(endpoint.id, (items) => items[0]?.status === 'delivered');
      const hooks = receiver.at(endpoint.path);
      expect(hooks).toHaveLength(2);
      for (const hook of hooks) expect(verified(hook, endpoint.secret)).toBeTruthy();
      expect(
        loggedIds((await browser().get(`/console/webhooks/${endpoint.id}?status=delivered`)).body),
      ).toEqual([failed?.id]);
    });

    it('signs the deliveries after a rotation with the secret the rotation’s page showed', async () => {
      const endpoint = await added();
      const rotated = await browser().post(`/console/webhooks/${endpoint.id}/rotate-secret`, {});
      const secret = secretIn(rotated.body) as string;
      expect(secret).not.toBe(endpoint.secret);
      await registerUser(app());
      await untilDeliveries(endpoint.id, (items) => items[0]?.status === 'delivered');
      const [hook] = receiver.at(endpoint.path);
      // During the rotation's grace the previous secret signs too; the new one must.
      expect(hook?.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
      expect(verified(hook, secret)).toBeTruthy();
    });

    it('shows a disabled endpoint’s redelivery as the API’s 409 and sends nothing', async () => {
      const endpoint = await added();
      await registerUser(app());
      const [delivered] = await untilDeliveries(endpoint.id, (items) => items[0]?.status === 'delivered');
      await browser().post(`/console/webhooks/${endpoint.id}/enabled`, { enabled: 'no' });
      await browser().post(`/console/webhooks/${endpoint.id}/deliveries/${delivered?.id}/redeliver`, {});
      expect(flashOf((await browser().get(`/console/webhooks/${endpoint.id}`)).body)).toBe(
        'Conflict: This endpoint is disabled; enable it to redeliver.',
      );
      expect(await deliveries(endpoint.id)).toEqual([delivered]);
      expect(receiver.at(endpoint.path)).toHaveLength(1);
    });

    it('pages the delivery log 20 at a time, keeping the status filter in the next page’s link', async () => {
      const endpoint = await added();
      for (let i = 0; i < 21; i++) await registerUser(app());
      const all = await untilDeliveries(
        endpoint.id,
        (items) => items.length === 21 && items.every((item) => item.status === 'delivered'),
      );
      const first = (await browser().get(`/console/webhooks/${endpoint.id}?status=delivered`)).body;
      expect(loggedIds(first)).toEqual(all.slice(0, 20).map((item) => item.id));
      const next = /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(first)?.[1]?.replaceAll('&amp;', '&');
      expect(next).toMatch(new RegExp(`^/console/webhooks/${endpoint.id}\\?status=delivered&cursor=`));
      const second = (await browser().get(next as string)).body;
      expect(loggedIds(second)).toEqual([all[20]?.id]);
      expect(second).not.toContain('rel="next"');
    });
  });
});
