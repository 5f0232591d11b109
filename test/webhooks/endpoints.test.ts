import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { WebhookEndpoint } from '../../protocol/webhooks.js';
import { createWebhooksModule } from '../../src/modules/webhooks/index.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** Names the tests resolve, so no test depends on the machine's DNS. */
const NAMES: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'inside.example.test': ['93.184.216.34', '10.0.0.7'],
};
const resolve = async (name: string) => (NAMES[name] ?? []).map((address) => ({ address }));

const URL_OK = 'https://hooks.example.test/atrium?team=1';

/** Webhook endpoints, for admins (docs/webhooks.md, "Endpoints"). */
describe('webhook endpoints', () => {
  const app = useTestApp(
    { WEBHOOK_MAX_ENDPOINTS: 3 },
    {
      modules: testModules.map((module) =>
        module.name === 'webhooks' ? createWebhooksModule({ resolve }) : module,
      ),
    },
  );
  const { call, expectStatus } = callsAs(app);
  let admin: TokenResponse;
  let moderator: TokenResponse;
  let user: TokenResponse;
  beforeAll(async () => {
    [admin, moderator, user] = [
      await registerWithRole(app(), 'admin'),
      await registerWithRole(app(), 'moderator'),
      await registerUser(app()),
    ];
  });

  const endpoints = async () =>
    (await queryRows<{ id: string }>(app().db, 'select id from webhook_endpoints order by created_at')).map(
      (row) => row.id,
    );
  const auditOf = (id: string) =>
    queryRows<{ action: string; before: unknown; after: unknown }>(
      app().db,
      'select action, before, after from audit_log where target_id = ? order by at, id',
      [id],
    );
  const create = async (body: object = { url: URL_OK, events: ['user.registered'] }) =>
    (await expectStatus(201, 'POST', '/api/admin/webhooks', admin, body)).json() as WebhookEndpoint & {
      secret: string;
    };
  afterEach(async () => {
    for (const id of await endpoints()) await expectStatus(204, 'DELETE', `/api/admin/webhooks/${id}`, admin);
  });

  it('refuses anonymous callers 401, and users and moderators 403 before their body is read, writing nothing', async () => {
    const before = await endpoints();
    const anonymous = await app().http.inject({ method: 'GET', url: '/api/admin/webhooks' });
    expect(anonymous.statusCode).toBe(401);
    for (const caller of [user, moderator]) {
      // An invalid body too: the role is judged first, so nobody learns how a URL would be judged.
      for (const body of [
        { url: URL_OK, events: ['user.registered'] },
        { url: 'http://10.0.0.1/', events: [] },
      ]) {
        const refused = await expectStatus(403, 'POST', '/api/admin/webhooks', caller, body);
        expect(refused.json().code).toBe('FORBIDDEN');
      }
      await expectStatus(403, 'GET', '/api/admin/webhooks', caller);
      await expectStatus(403, 'PATCH', `/api/admin/webhooks/${before[0] ?? 'none'}`, caller, { url: 'x' });
    }
    expect(await endpoints()).toEqual(before);
  });

  it('creates an enabled endpoint whose secret is shown once, in the 201, and audited without it', async () => {
    const created = await create({
      url: URL_OK,
      events: ['user.registered', 'user.registered', 'group.created'],
    });
    expect(created).toEqual({
      id: expect.any(String),
      url: URL_OK,
      events: ['user.registered', 'group.created'],
      enabled: true,
      description: '',
      created_at: expect.stringMatching(/Z$/),
      updated_at: created.created_at,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const { secret, ...endpoint } = created;
    const got = await expectStatus(200, 'GET', `/api/admin/webhooks/${created.id}`, admin);
    expect(got.json()).toEqual(endpoint);
    const listed = await expectStatus(200, 'GET', '/api/admin/webhooks', admin);
    expect(listed.json().items).toContainEqual(endpoint);
    const patched = await expectStatus(200, 'PATCH', `/api/admin/webhooks/${created.id}`, admin, {
      description: 'Analytics',
    });
    for (const body of [got.body, listed.body, patched.body]) expect(body).not.toContain(secret);
    const audit = await auditOf(created.id);
    expect(audit[0]).toEqual({ action: 'webhooks.create', before: null, after: endpoint });
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  it('takes ["*"] or 1-50 names of the catalogue as events, else 422 naming body.events, writing nothing', async () => {
    expect((await create({ url: URL_OK, events: ['*'] })).events).toEqual(['*']);
    for (const events of [[], ['user.exploded'], ['*', 'user.registered'], 'user.registered', null]) {
      const refused = await expectStatus(422, 'POST', '/api/admin/webhooks', admin, { url: URL_OK, events });
      expect(refused.json().code).toBe('VALIDATION_FAILED');
      expect(JSON.stringify(refused.json().errors)).toContain('body.events');
    }
    expect(await endpoints()).toHaveLength(1);
  });

  it('refuses a description past 500 characters or unstorable, an unknown field or a non-boolean enabled, 422 naming it, changing nothing', async () => {
    const kept = await create();
    const bodies: [object, string][] = [
      [{ url: URL_OK, events: ['*'], description: 'd'.repeat(501) }, 'body.description'],
      [{ url: URL_OK, events: ['*'], description: 'a\u0000b' }, 'body.description'],
      [{ url: URL_OK, events: ['*'], secret: 'whsec_mine' }, 'secret'],
      [{ url: URL_OK, events: ['*'], ['__proto__']: { enabled: false } }, '__proto__'],
    ];
    for (const [body, named] of bodies) {
      const refused = await expectStatus(422, 'POST', '/api/admin/webhooks', admin, body);
      expect(JSON.stringify(refused.json()), named).toContain(named);
    }
    const patched = await expectStatus(422, 'PATCH', `/api/admin/webhooks/${kept.id}`, admin, {
      enabled: 'yes',
    });
    expect(JSON.stringify(patched.json().errors)).toContain('body.enabled');
    expect(await endpoints()).toEqual([kept.id]);
  });

  it('refuses a URL outside the address rules 422 naming body.url, on create and on PATCH, changing nothing', async () => {
    const kept = await create();
    const refusedUrls = [
      'http://127.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://2852039166/',
      'http://[::ffff:10.0.0.1]/',
      'https://inside.example.test/',
      'https://nowhere.example.test/',
      'ftp://hooks.example.test/',
      'https://user:pass@hooks.example.test/',
      'https://hooks.example.test/#fragment',
      'hooks.example.test/relative',
      `https://hooks.example.test/${'a'.repeat(2048)}`,
      'https://hooks.example.test/a\u0000b',
      'https://hooks.example.test/\ud800',
    ];
    for (const url of refusedUrls) {
      const created = await expectStatus(422, 'POST', '/api/admin/webhooks', admin, { url, events: ['*'] });
      expect(JSON.stringify(created.json().errors), url).toContain('body.url');
      const patched = await expectStatus(422, 'PATCH', `/api/admin/webhooks/${kept.id}`, admin, { url });
      expect(JSON.stringify(patched.json().errors), url).toContain('body.url');
    }
    expect(await endpoints()).toEqual([kept.id]);
    const { secret: _secret, ...unchanged } = kept;
    expect((await expectStatus(200, 'GET', `/api/admin/webhooks/${kept.id}`, admin)).json()).toEqual(
      unchanged,
    );
  });

  it('refuses one endpoint past WEBHOOK_MAX_ENDPOINTS 409 QUOTA_EXCEEDED with the limit, also when creations race', async () => {
    await create();
    const racing = await Promise.all(
      [1, 2, 3].map(() => call('POST', '/api/admin/webhooks', admin, { url: URL_OK, events: ['*'] })),
    );
    expect(racing.map((response) => response.statusCode).sort()).toEqual([201, 201, 409]);
    const refused = racing.find((response) => response.statusCode === 409);
    expect(refused?.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect(await endpoints()).toHaveLength(3);
  });

  it('pages endpoints newest first, and answers a forged cursor 422', async () => {
    const made = [await create(), await create(), await create()].map((endpoint) => endpoint.id);
    const first = (await expectStatus(200, 'GET', '/api/admin/webhooks?limit=2', admin)).json();
    expect(first.items.map((endpoint: WebhookEndpoint) => endpoint.id)).toEqual([made[2], made[1]]);
    const second = (
      await expectStatus(200, 'GET', `/api/admin/webhooks?limit=2&cursor=${first.next_cursor}`, admin)
    ).json();
    expect(second).toEqual({ items: [expect.objectContaining({ id: made[0] })], next_cursor: null });
    await expectStatus(422, 'GET', '/api/admin/webhooks?cursor=WyJub3BlIl0', admin);
  });

  it('changes the fields given, audits only the changed ones, and answers 404 for an endpoint that is not there', async () => {
    const endpoint = await create();
    const patched = (
      await expectStatus(200, 'PATCH', `/api/admin/webhooks/${endpoint.id}`, admin, {
        events: ['*'],
        enabled: false,
        description: 'Paused',
        url: URL_OK,
      })
    ).json() as WebhookEndpoint;
    expect(patched).toMatchObject({ events: ['*'], enabled: false, description: 'Paused', url: URL_OK });
    const audit = await auditOf(endpoint.id);
    expect(audit.at(-1)).toEqual({
      action: 'webhooks.update',
      before: { events: ['user.registered'], enabled: true, description: '' },
      after: { events: ['*'], enabled: false, description: 'Paused' },
    });
    for (const id of ['01890000-0000-7000-8000-000000000000', 'not-an-id']) {
      const missing = await expectStatus(404, 'PATCH', `/api/admin/webhooks/${id}`, admin, { enabled: true });
      expect(missing.json().code).toBe('NOT_FOUND');
      await expectStatus(404, 'GET', `/api/admin/webhooks/${id}`, admin);
      await expectStatus(404, 'POST', `/api/admin/webhooks/${id}/rotate-secret`, admin);
      await expectStatus(404, 'GET', `/api/admin/webhooks/${id}/deliveries`, admin);
    }
    await expectStatus(422, 'PATCH', `/api/admin/webhooks/${endpoint.id}`, admin, { secret: 'whsec_x' });
  });

  it('rotates the secret, answering the new one once and auditing no secret', async () => {
    const endpoint = await create();
    const rotated = (
      await expectStatus(200, 'POST', `/api/admin/webhooks/${endpoint.id}/rotate-secret`, admin)
    ).json() as { secret: string };
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    const audit = await auditOf(endpoint.id);
    expect(audit.at(-1)).toEqual({ action: 'webhooks.rotate_secret', before: null, after: null });
    const [stored] = await queryRows<{ secret: string; previous_secret: string }>(
      app().db,
      'select secret, previous_secret from webhook_endpoints where id = ?',
      [endpoint.id],
    );
    expect(stored).toEqual({ secret: rotated.secret, previous_secret: endpoint.secret });
  });

  it('deletes an endpoint with its deliveries, audited; deleting it again answers 404', async () => {
    const endpoint = await create();
    const { secret: _secret, ...view } = endpoint;
    await expectStatus(204, 'DELETE', `/api/admin/webhooks/${endpoint.id}`, admin);
    expect(await endpoints()).toEqual([]);
    expect((await auditOf(endpoint.id)).at(-1)).toEqual({
      action: 'webhooks.delete',
      before: view,
      after: null,
    });
    const again = await expectStatus(404, 'DELETE', `/api/admin/webhooks/${endpoint.id}`, admin);
    expect(again.json().code).toBe('NOT_FOUND');
  });
});
