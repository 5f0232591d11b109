import { afterAll, describe, expect, it } from 'vitest';
import { recordAudit } from '../../src/modules/audit/index.js';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { executeBound } from '../../src/platform/db.js';
import type { AppError } from '../../src/platform/errors.js';
import { newId } from '../../src/platform/ids.js';
import { auditEntriesOf } from '../audit/audit.js';
import { bearer, PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { type Services, useServices } from '../helpers/services.js';
import { openedSockets } from '../helpers/ws-client.js';
import { asAdmin, balanceOf, key, ledgerCounts } from './economy.js';

/** An extension's `ctx.economy.grant` (the extensions contract), through the economy module's API. */

const extension = (name: string) => ({ kind: 'extension' as const, name });

/** The economy's rows and the audit log's, to prove a refusal or a replay wrote nothing. */
async function written(s: Services) {
  const [audit] = await executeBound<{ n: string }>(
    s.db.data,
    'select count(*)::text as n from audit_log',
    [],
  );
  return { ...(await ledgerCounts(s)), audit: audit?.n };
}

describe("an extension's grant", () => {
  const services = useServices();
  const grantAs = (s: Services, name: string, input: unknown) =>
    s.apis.economy.grantAs(s.db.data, extension(name), input, s.ctxFor(null).log);

  it('credits the wallet from the issuance account and records one audit entry naming the extension', async () => {
    const s = services();
    const user = await s.createUser();
    const input = { user_id: user.user.id, amount: 300, reason: 'quest reward', idempotency_key: 'quest:1' };
    const granted = await grantAs(s, 'quests', input);
    expect(granted).toEqual({
      transaction_id: expect.any(String),
      user_id: user.user.id,
      amount: 300,
      currency: 'coin',
      balance: 300,
      replayed: false,
    });
    expect(await balanceOf(s, user)).toBe(300);
    const tx = await s.call('economy.transaction', s.ctxFor(user.user), {
      transaction_id: granted.transaction_id,
    });
    expect(tx.kind).toBe('grant');
    expect(tx.entries.map((e) => [e.account, e.kind, e.amount])).toEqual(
      expect.arrayContaining([
        ['platform_issuance', 'grant', -300],
        ['wallet', 'grant', 300],
      ]),
    );
    expect(await auditEntriesOf(s.db, user.user.id)).toEqual([
      {
        actor_kind: 'extension',
        actor_id: 'quests',
        action: 'economy.grant',
        target_type: 'user',
        target_id: user.user.id,
        before: null,
        after: {
          transaction_id: granted.transaction_id,
          amount: 300,
          reason: 'quest reward',
          idempotency_key: 'quest:1',
        },
      },
    ]);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('accepts the bounds: 10^12 coins, a reason of 200 characters and a key of 255 visible ASCII characters', async () => {
    const s = services();
    const user = await s.createUser();
    const granted = await grantAs(s, 'quests', {
      user_id: user.user.id,
      amount: 1_000_000_000_000,
      reason: 'é'.repeat(200),
      idempotency_key: '~'.repeat(255),
    });
    expect(granted).toMatchObject({ amount: 1_000_000_000_000, balance: 1_000_000_000_000, replayed: false });
  });

  it('replays the first answer for the same key and values, moving nothing and recording no second entry', async () => {
    const s = services();
    const user = await s.createUser();
    const input = { user_id: user.user.id, amount: 40, reason: 'daily', idempotency_key: key() };
    const first = await grantAs(s, 'daily-bonus', input);
    const before = await written(s);
    const again = await grantAs(s, 'daily-bonus', input);
    expect(again).toEqual({ ...first, replayed: true });
    // The same user spelled in upper case is the same request.
    const upper = await grantAs(s, 'daily-bonus', { ...input, user_id: user.user.id.toUpperCase() });
    expect(upper).toEqual({ ...first, replayed: true });
    expect(await written(s)).toEqual(before);
    expect(await balanceOf(s, user)).toBe(40);
    expect(await auditEntriesOf(s.db, user.user.id)).toHaveLength(1);
  });

  it.each([
    ['another amount', () => ({ amount: 41 })],
    ['another reason', () => ({ reason: 'weekly' })],
    ['another user', (otherId: string) => ({ user_id: otherId })],
  ])('refuses the key again with %s as IDEMPOTENCY_KEY_REUSED, writing nothing', async (_what, change) => {
    const s = services();
    const [user, other] = [await s.createUser(), await s.createUser()];
    const input = { user_id: user.user.id, amount: 40, reason: 'daily', idempotency_key: key() };
    await grantAs(s, 'daily-bonus', input);
    const before = await written(s);
    const changed = { ...input, ...change(other.user.id) };
    await expect(grantAs(s, 'daily-bonus', changed)).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect(await written(s)).toEqual(before);
    expect([await balanceOf(s, user), await balanceOf(s, other)]).toEqual([40, 0]);
  });

  it("keeps each extension's keys its own and apart from the users' keys", async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await s.createUser();
    const shared = key();
    const input = { user_id: user.user.id, amount: 5, reason: 'hello', idempotency_key: shared };
    const first = await grantAs(s, 'first-ext', input);
    const second = await grantAs(s, 'second-ext', input);
    await s.call('economy.admin.grant', s.ctxFor(asAdmin(admin.user)), input);
    expect([first.replayed, second.replayed]).toEqual([false, false]);
    expect(second.transaction_id).not.toBe(first.transaction_id);
    expect(await balanceOf(s, user)).toBe(15);
  });

  it('credits once for 10 concurrent calls with one key; the others replay it or are told the key is in use', async () => {
    const s = services();
    const user = await s.createUser();
    const input = { user_id: user.user.id, amount: 7, reason: 'race', idempotency_key: key() };
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => grantAs(s, 'racer', input)));
    const granted = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    for (const result of results) {
      if (result.status === 'rejected')
        expect(result.reason).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
    }
    expect(granted.filter((g) => !g.replayed)).toHaveLength(1);
    expect(new Set(granted.map((g) => g.transaction_id)).size).toBe(1);
    expect(await balanceOf(s, user)).toBe(7);
    expect(await auditEntriesOf(s.db, user.user.id)).toHaveLength(1);
  });

  it.each([
    ['an amount of 0', { amount: 0 }, 'amount'],
    ['an amount over 10^12', { amount: 1_000_000_000_001 }, 'amount'],
    ['a fractional amount', { amount: 1.5 }, 'amount'],
    ['an amount given as text', { amount: '5' }, 'amount'],
    ['no amount', { amount: undefined }, 'amount'],
    ['an empty reason', { reason: '' }, 'reason'],
    ['a reason of 201 characters', { reason: 'r'.repeat(201) }, 'reason'],
    ['a reason that is no text', { reason: 42 }, 'reason'],
    ['an empty key', { idempotency_key: '' }, 'idempotency_key'],
    ['a key of 256 characters', { idempotency_key: 'k'.repeat(256) }, 'idempotency_key'],
    ['a key with a space', { idempotency_key: 'a key' }, 'idempotency_key'],
    ['a key beyond ASCII', { idempotency_key: 'clé' }, 'idempotency_key'],
    ['a user id that is no text', { user_id: 7 }, 'user_id'],
  ])('refuses %s with VALIDATION_FAILED naming the field, writing nothing', async (_what, change, field) => {
    const s = services();
    const user = await s.createUser();
    const before = await written(s);
    const input = { user_id: user.user.id, amount: 10, reason: 'ok', idempotency_key: key(), ...change };
    const refused = await grantAs(s, 'validator', input).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'VALIDATION_FAILED' });
    const { errors } = (refused as AppError).extra;
    expect(new Set(errors?.map((error) => error.path))).toEqual(new Set([field]));
    expect(await written(s)).toEqual(before);
  });

  it.each([
    ['nothing', undefined],
    ['a string', 'grant me'],
  ])('refuses an argument that is %s with VALIDATION_FAILED', async (_what, input) => {
    const s = services();
    await expect(grantAs(s, 'validator', input)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it.each([
    ['an id no account has', '01a1ffb2-0000-7000-8000-000000000000'],
    ['a string that is no id', 'not-a-user'],
    ['an empty string', ''],
  ])('answers a grant to %s with NOT_FOUND, writing nothing', async (_what, userId) => {
    const s = services();
    const before = await written(s);
    await expect(
      grantAs(s, 'finder', { user_id: userId, amount: 10, reason: 'x', idempotency_key: key() }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await written(s)).toEqual(before);
  });

  it('refuses an extension actor whose name is no extension name in the database', async () => {
    const s = services();
    const entry = { action: 'economy.grant', target: { type: 'user', id: newId() } };
    await expect(recordAudit(s.db.data, { ...entry, actor: extension('Not A Name') })).rejects.toThrow();
    await expect(recordAudit(s.db.data, { ...entry, actor: extension('') })).rejects.toThrow();
  });
});

describe("an extension's grant over the API", () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());
  const grantAs = (name: string, input: object) =>
    app().modules.economy.grantAs(app().db.data, extension(name), input, app().log);

  it("lists an extension's entries for GET /api/admin/audit?actor=<its name>, and an account's for its id", async () => {
    const admin = await registerWithRole(app(), 'admin');
    const user = await registerUser(app());
    const granted = await grantAs('welcome-bonus', {
      user_id: user.user.id,
      amount: 25,
      reason: 'welcome',
      idempotency_key: key(),
    });
    const byAdmin = await app().http.inject({
      method: 'POST',
      url: '/api/economy/admin/grants',
      headers: { ...bearer(admin.access_token), 'idempotency-key': key() },
      payload: { user_id: user.user.id, amount: 5, reason: 'extra' },
    });
    expect(byAdmin.statusCode).toBe(201);
    const audit = async (actor: string) => {
      const listed = await app().http.inject({
        method: 'GET',
        url: `/api/admin/audit?actor=${actor}`,
        headers: bearer(admin.access_token),
      });
      expect(listed.statusCode).toBe(200);
      return listed.json().items as Record<string, unknown>[];
    };
    expect(await audit('welcome-bonus')).toEqual([
      {
        id: expect.any(String),
        at: expect.any(String),
        actor_kind: 'extension',
        actor_id: 'welcome-bonus',
        action: 'economy.grant',
        target_type: 'user',
        target_id: user.user.id,
        before: null,
        after: {
          transaction_id: granted.transaction_id,
          amount: 25,
          reason: 'welcome',
          idempotency_key: expect.any(String),
        },
      },
    ]);
    for (const spelling of [admin.user.id, admin.user.id.toUpperCase()]) {
      expect((await audit(spelling)).map((e) => [e.actor_kind, e.actor_id, e.after])).toEqual([
        [
          'user',
          admin.user.id,
          { transaction_id: byAdmin.json().transaction_id, amount: 5, reason: 'extra' },
        ],
      ]);
    }
    expect(await audit('another-extension')).toEqual([]);
  });

  it("refuses a moderator an extension's entries with 403", async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const refused = await app().http.inject({
      method: 'GET',
      url: '/api/admin/audit?actor=welcome-bonus',
      headers: bearer(moderator.access_token),
    });
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
  });

  it("tells the user's sockets economy.balance once the grant committed", async () => {
    const user = await registerUser(app());
    const socket = await open(user.access_token);
    const granted = await grantAs('welcome-bonus', {
      user_id: user.user.id,
      amount: 12,
      reason: 'welcome',
      idempotency_key: key(),
    });
    const balance = await socket.next((f) => f.t === 'economy.balance');
    expect(balance.d).toEqual({ account: 'wallet', balance: 12, transaction_id: granted.transaction_id });
  });

  it('answers NOT_FOUND for a deleted account, writing nothing', async () => {
    const user = await registerUser(app());
    const deleted = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(user.access_token),
      payload: { password: PASSWORD },
    });
    expect(deleted.statusCode).toBe(204);
    const input = { user_id: user.user.id, amount: 3, reason: 'late', idempotency_key: key() };
    await expect(grantAs('welcome-bonus', input)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await queryRows(app().db, 'select 1 from audit_log where target_id = ?', [user.user.id])).toEqual(
      [],
    );
  });
});
