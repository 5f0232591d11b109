import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { WebhookDelivery, WebhookEndpoint } from '../../protocol/webhooks.js';
import { SUBSCRIBED_ENDPOINT_EXISTS_SQL } from '../../src/modules/webhooks/deliveries.repository.js';
import { createWebhooksModule, type WebhooksApi } from '../../src/modules/webhooks/index.js';
import { executeBound } from '../../src/platform/db.js';
import { callsAs, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { type ReceivedHook, webhookReceiver } from '../helpers/webhook-receiver.js';

const DAY_MS = 86_400_000;
/** Moved forward by the retention test; the webhooks module's clock. */
let clockOffsetMs = 0;

/**
 * Delivery of webhook events to a local receiver (docs/webhooks.md, "Delivery"): private
 * networks are allowed here, retries come after 1 s, 2 s, and a delivery fails after 3 attempts;
 * the job's safety pass is an hour away, so every delivery here is attempted because something
 * woke the job.
 */
describe('webhook delivery', () => {
  const app = useTestApp(
    { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, WEBHOOK_RETRY_BASE_SECONDS: 1, WEBHOOK_MAX_ATTEMPTS: 3 },
    {
      modules: testModules.map((module) =>
        module.name === 'webhooks'
          ? createWebhooksModule({
              clock: () => new Date(Date.now() + clockOffsetMs),
              // No pass of its own within a test: only what wakes the job (a fan-out, a retry of
              // this node's coming due, a redelivery, an endpoint enabled again) runs one.
              deliveryIntervalMs: 3_600_000,
            })
          : module,
      ),
    },
  );
  const { expectStatus } = callsAs(app);
  /** Status sequences per receiver path; the last one repeats. */
  const plans = new Map<string, number[]>();
  /** Paths whose next answer waits for the promise. */
  const held = new Map<string, Promise<number>>();
  let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
  let admin: TokenResponse;
  beforeAll(async () => {
    receiver = await webhookReceiver((path, n) => {
      const hold = held.get(path);
      if (hold) {
        held.delete(path);
        return hold;
      }
      const plan = plans.get(path) ?? [204];
      return plan[Math.min(n, plan.length) - 1] ?? 204;
    });
    admin = await registerWithRole(app(), 'admin');
  });
  afterAll(() => receiver.close());
  const webhooks = () => (app().modules as unknown as { webhooks: WebhooksApi }).webhooks;

  /** An endpoint on its own receiver path answering `plan` in turn. */
  const endpoint = async (events: string[], plan: number[] = [204]) => {
    const path = `/hooks/${randomUUID()}`;
    plans.set(path, plan);
    const created = (
      await expectStatus(201, 'POST', '/api/admin/webhooks', admin, { url: receiver.url(path), events })
    ).json() as WebhookEndpoint & { secret: string };
    return { ...created, path };
  };
  const deliveries = async (id: string, query = '') =>
    (await expectStatus(200, 'GET', `/api/admin/webhooks/${id}/deliveries${query}`, admin)).json()
      .items as WebhookDelivery[];
  /** Waits for `check` on the endpoint's deliveries (a poll with a generous deadline). */
  const untilDeliveries = (id: string, check: (items: WebhookDelivery[]) => boolean) =>
    vi.waitFor(
      async () => {
        const items = await deliveries(id);
        if (!check(items)) throw new Error(`deliveries so far: ${JSON.stringify(items)}`);
        return items;
      },
      { timeout: 30_000, interval: 50 },
    );
  /** Every user.registered fan-out recorded so far is done. */
  const fannedOut = () =>
    vi.waitFor(
      async () => {
        const [row] = await queryRows<{ n: number }>(
          app().db,
          "select count(*)::int as n from outbox_deliveries where consumer like 'webhooks:%'",
        );
        expect(row?.n).toBe(0);
      },
      { timeout: 30_000, interval: 50 },
    );
  const verified = (hook: ReceivedHook, secret: string) =>
    new Webhook(secret).verify(hook.body, hook.headers as Record<string, string>);

  it('posts each event to every enabled endpoint subscribed to it, signed, with the body of the catalogue', async () => {
    const named = await endpoint(['user.registered']);
    const every = await endpoint(['*']);
    const elsewhere = await endpoint(['gameserver.failed']);
    const username = uniqueUsername();
    const { user } = await registerUser(app(), username);
    const [delivery] = await untilDeliveries(named.id, (items) => items[0]?.status === 'delivered');
    await untilDeliveries(every.id, (items) => items[0]?.status === 'delivered');
    expect(delivery).toEqual({
      id: expect.any(String),
      event_type: 'user.registered',
      status: 'delivered',
      attempts: 1,
      last_status_code: 204,
      last_error: null,
      next_attempt_at: null,
      created_at: expect.stringMatching(/Z$/),
      delivered_at: expect.stringMatching(/Z$/),
    });
    const [hook] = receiver.at(named.path);
    expect(hook?.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': delivery?.id,
      'webhook-timestamp': expect.stringMatching(/^\d+$/),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]+=*$/),
    });
    expect(JSON.parse(hook?.body ?? '')).toEqual({
      id: delivery?.id,
      type: 'user.registered',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { user: { id: user.id, username, created_at: user.created_at } },
    });
    expect(verified(hook as ReceivedHook, named.secret)).toBeTruthy();
    expect(() => verified(hook as ReceivedHook, every.secret)).toThrow();
    const [everyHook] = receiver.at(every.path);
    expect(JSON.parse(everyHook?.body ?? '').data.user.id).toBe(user.id);
    expect(everyHook?.headers['webhook-id']).not.toBe(delivery?.id);
    await fannedOut();
    expect(await deliveries(elsewhere.id)).toEqual([]);
    expect(receiver.at(elsewhere.path)).toEqual([]);
  });

  it('retries failed attempts (an error status, a redirect not followed) with backoff, the same webhook-id and body bytes', async () => {
    const flaky = await endpoint(['user.registered'], [500, 302, 200]);
    await registerUser(app());
    const [delivery] = await untilDeliveries(flaky.id, (items) => items[0]?.status === 'delivered');
    expect(delivery).toMatchObject({ attempts: 3, last_status_code: 200, last_error: null });
    const hooks = receiver.at(flaky.path);
    expect(hooks).toHaveLength(3);
    expect(new Set(hooks.map((hook) => hook.headers['webhook-id']))).toEqual(new Set([delivery?.id]));
    expect(new Set(hooks.map((hook) => hook.body)).size).toBe(1);
    for (const hook of hooks) expect(verified(hook, flaky.secret)).toBeTruthy();
    // The redirect's target was never asked for.
    expect(receiver.received.filter((hook) => hook.path.endsWith('/moved'))).toEqual([]);
  });

  it('marks a delivery failed after WEBHOOK_MAX_ATTEMPTS failed attempts, and redelivers it with a fresh budget', async () => {
    const down = await endpoint(['user.registered'], [503, 503, 503, 200]);
    await registerUser(app());
    const [failed] = await untilDeliveries(down.id, (items) => items[0]?.status === 'failed');
    expect(failed).toMatchObject({
      attempts: 3,
      last_status_code: 503,
      last_error: 'refused with 503',
      next_attempt_at: null,
      delivered_at: null,
    });
    const again = await expectStatus(
      202,
      'POST',
      `/api/admin/webhooks/${down.id}/deliveries/${failed?.id}/redeliver`,
      admin,
    );
    expect(again.json()).toMatchObject({ id: failed?.id, status: 'pending', attempts: 3 });
    const [delivered] = await untilDeliveries(down.id, (items) => items[0]?.status === 'delivered');
    expect(delivered).toMatchObject({ attempts: 4, last_status_code: 200 });
    const hooks = receiver.at(down.path);
    expect(new Set(hooks.map((hook) => `${hook.headers['webhook-id']} ${hook.body}`)).size).toBe(1);
    const audit = await queryRows<{ after: unknown }>(
      app().db,
      "select after from audit_log where action = 'webhooks.redeliver' and target_id = ?",
      [down.id],
    );
    expect(audit).toEqual([{ after: { delivery_id: failed?.id } }]);
    // Another endpoint's delivery, or none: 404.
    const other = await endpoint(['gameserver.failed']);
    await expectStatus(
      404,
      'POST',
      `/api/admin/webhooks/${other.id}/deliveries/${failed?.id}/redeliver`,
      admin,
    );
    await expectStatus(
      404,
      'POST',
      `/api/admin/webhooks/${down.id}/deliveries/${randomUUID()}/redeliver`,
      admin,
    );
  });

  it('writes no outcome of an attempt a redelivery overtook: the redelivery is due when that attempt’s lease ends', async () => {
    const slow = await endpoint(['user.registered']);
    let answer: (status: number) => void = () => {};
    held.set(slow.path, new Promise<number>((resolve) => (answer = resolve)));
    await registerUser(app());
    await vi.waitFor(() => expect(receiver.at(slow.path)).toHaveLength(1), { timeout: 30_000, interval: 50 });
    const [running] = await deliveries(slow.id);
    expect(running).toMatchObject({ status: 'pending', attempts: 1, last_error: null });
    const again = await expectStatus(
      202,
      'POST',
      `/api/admin/webhooks/${slow.id}/deliveries/${running?.id}/redeliver`,
      admin,
    );
    expect(again.json()).toMatchObject({ next_attempt_at: running?.next_attempt_at });
    answer(500);
    // Passes run one at a time: once a later event is delivered, the pass of the held attempt ended.
    const later = await endpoint(['user.registered']);
    await registerUser(app());
    await untilDeliveries(later.id, (items) => items.some((item) => item.status === 'delivered'));
    const [after] = (await deliveries(slow.id)).filter((item) => item.id === running?.id);
    expect(after).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null, last_error: null });
  });

  it('delivers to other endpoints while one receiver holds its answer', async () => {
    const stuck = await endpoint(['user.registered']);
    let answer: (status: number) => void = () => {};
    held.set(stuck.path, new Promise<number>((resolve) => (answer = resolve)));
    await registerUser(app());
    await vi.waitFor(() => expect(receiver.at(stuck.path)).toHaveLength(1), {
      timeout: 30_000,
      interval: 50,
    });
    const healthy = await endpoint(['user.registered']);
    await registerUser(app());
    await untilDeliveries(healthy.id, (items) => items[0]?.status === 'delivered');
    // The held attempt is still under way: nothing waited for it.
    const stuckItems = await deliveries(stuck.id);
    expect(stuckItems.at(-1)).toMatchObject({ status: 'pending', attempts: 1, last_error: null });
    answer(204);
  });

  it('gives a disabled endpoint no delivery for the events meanwhile, and resumes its pending ones once enabled', async () => {
    const paused = await endpoint(['user.registered'], [500, 204]);
    const { user: before } = await registerUser(app());
    const [pending] = await untilDeliveries(paused.id, (items) => items[0]?.last_status_code === 500);
    expect(pending).toMatchObject({ status: 'pending', last_status_code: 500 });
    await expectStatus(200, 'PATCH', `/api/admin/webhooks/${paused.id}`, admin, { enabled: false });
    const { user: meanwhile } = await registerUser(app());
    await fannedOut();
    const refused = await expectStatus(
      409,
      'POST',
      `/api/admin/webhooks/${paused.id}/deliveries/${pending?.id}/redeliver`,
      admin,
    );
    expect(refused.json().code).toBe('CONFLICT');
    await expectStatus(200, 'PATCH', `/api/admin/webhooks/${paused.id}`, admin, { enabled: true });
    const { user: after } = await registerUser(app());
    const items = await untilDeliveries(
      paused.id,
      (found) => found.length === 2 && found.every((item) => item.status === 'delivered'),
    );
    const users = receiver
      .at(paused.path)
      .map((hook) => JSON.parse(hook.body).data.user.id as string)
      .filter((id, i, all) => all.indexOf(id) === i);
    expect(users.sort()).toEqual([before.id, after.id].sort());
    expect(users).not.toContain(meanwhile.id);
    expect(items.map((item) => item.event_type)).toEqual(['user.registered', 'user.registered']);
  });

  it('signs with the new secret and, during the rotation grace, the previous one after it', async () => {
    const rotating = await endpoint(['user.registered']);
    const { secret } = (
      await expectStatus(200, 'POST', `/api/admin/webhooks/${rotating.id}/rotate-secret`, admin)
    ).json() as { secret: string };
    await registerUser(app());
    await untilDeliveries(rotating.id, (items) => items[0]?.status === 'delivered');
    const [hook] = receiver.at(rotating.path);
    const signatures = String(hook?.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    const only = (signature: string) =>
      ({ ...hook, headers: { ...hook?.headers, 'webhook-signature': signature } }) as ReceivedHook;
    expect(verified(only(signatures[0] as string), secret)).toBeTruthy();
    expect(() => verified(only(signatures[0] as string), rotating.secret)).toThrow();
    expect(verified(only(signatures[1] as string), rotating.secret)).toBeTruthy();
  });

  it('delivers nothing for a change that did not commit', async () => {
    const every = await endpoint(['*']);
    const { user } = await registerUser(app());
    const refused = await app().http.inject({
      method: 'POST',
      url: '/api/auth/register',
      payload: {
        username: user.username,
        password: 'another password',
        accept_terms: true,
        confirm_18_plus: true,
      },
    });
    expect(refused.statusCode).toBe(409);
    await fannedOut();
    const items = await untilDeliveries(every.id, (found) =>
      found.every((item) => item.status === 'delivered'),
    );
    expect(items).toHaveLength(1);
  });

  it('pages an endpoint’s deliveries newest first, filters by status, and refuses another status 422', async () => {
    const paged = await endpoint(['user.registered']);
    for (let i = 0; i < 3; i++) await registerUser(app());
    const all = await untilDeliveries(
      paged.id,
      (items) => items.filter((i) => i.status === 'delivered').length === 3,
    );
    const first = (
      await expectStatus(
        200,
        'GET',
        `/api/admin/webhooks/${paged.id}/deliveries?limit=2&status=delivered`,
        admin,
      )
    ).json();
    expect(first.items.map((item: WebhookDelivery) => item.id)).toEqual(
      all.slice(0, 2).map((item) => item.id),
    );
    const rest = (
      await expectStatus(
        200,
        'GET',
        `/api/admin/webhooks/${paged.id}/deliveries?limit=2&status=delivered&cursor=${first.next_cursor}`,
        admin,
      )
    ).json();
    expect(rest).toEqual({ items: [all[2]], next_cursor: null });
    expect(await deliveries(paged.id, '?status=failed')).toEqual([]);
    await expectStatus(422, 'GET', `/api/admin/webhooks/${paged.id}/deliveries?status=lost`, admin);
  });

  it('removes deliveries WEBHOOK_DELIVERY_RETENTION_DAYS after they finished, keeping pending ones', async () => {
    const kept = await endpoint(['user.registered'], [204, 500]);
    await registerUser(app());
    await untilDeliveries(kept.id, (items) => items[0]?.status === 'delivered');
    await registerUser(app());
    await untilDeliveries(kept.id, (items) => items.length === 2 && items[0]?.last_status_code === 500);
    clockOffsetMs = 31 * DAY_MS;
    try {
      await webhooks().runDeliveries();
    } finally {
      clockOffsetMs = 0;
    }
    const left = await deliveries(kept.id);
    expect(left.map((item) => item.status)).toEqual(['pending']);
  });

  it('drops an endpoint’s deliveries with it', async () => {
    const gone = await endpoint(['user.registered']);
    await registerUser(app());
    await untilDeliveries(gone.id, (items) => items.length === 1);
    await expectStatus(204, 'DELETE', `/api/admin/webhooks/${gone.id}`, admin);
    const [row] = await queryRows<{ n: number }>(
      app().db,
      'select count(*)::int as n from webhook_deliveries where endpoint_id = ?',
      [gone.id],
    );
    expect(row?.n).toBe(0);
  });
});

describe('webhook events nobody is sent', () => {
  const app = useTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  const { expectStatus } = callsAs(app);
  /** The webhooks consumers' condition, as the outbox's recording statement evaluates it ($2: the type). */
  const wanted = async (type: string) =>
    (
      await executeBound<{ wanted: boolean }>(
        app().db.data,
        `select ${SUBSCRIBED_ENDPOINT_EXISTS_SQL} as wanted from (select $1::text) as bound`,
        ['unused', type],
      )
    )[0]?.wanted;

  it('are recorded only while an enabled endpoint subscribes to their type, by name or by *', async () => {
    const admin = await registerWithRole(app(), 'admin');
    expect(await wanted('user.registered')).toBe(false);
    const create = async (events: string[]) =>
      (
        await expectStatus(201, 'POST', '/api/admin/webhooks', admin, {
          url: 'http://127.0.0.1:9/hooks',
          events,
        })
      ).json() as WebhookEndpoint;
    const named = await create(['user.registered']);
    expect([await wanted('user.registered'), await wanted('user.deleted')]).toEqual([true, false]);
    await expectStatus(200, 'PATCH', `/api/admin/webhooks/${named.id}`, admin, { enabled: false });
    expect(await wanted('user.registered')).toBe(false);
    await create(['*']);
    expect([await wanted('user.registered'), await wanted('user.deleted')]).toEqual([true, true]);
  });
});
