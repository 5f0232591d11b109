import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { executeBound } from '../../src/platform/db.js';
import { auditEntriesOf } from '../audit/audit.js';
import { login, PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp, whileTransactionOpen } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { authedSocket, request } from '../helpers/ws-client.js';
import { adminCalls } from './admin.js';

const HOUR = 3600_000;

describe('account suspensions', () => {
  const app = useTestApp();
  const { suspend, unsuspend, account, refresh, stateOf, expectStatus } = adminCalls(app);
  const admin = () => registerWithRole(app(), 'admin');

  const refusal = (until: string | null) => ({
    type: 'urn:atrium:problem:account_suspended',
    title: 'Forbidden',
    status: 403,
    code: 'ACCOUNT_SUSPENDED',
    detail: until === null ? 'This account is suspended.' : `This account is suspended until ${until}.`,
    until,
  });

  it('refuses login and refresh of a suspended account with 403 ACCOUNT_SUSPENDED and its until, and revokes its sessions', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    const until = new Date(Date.now() + 24 * HOUR).toISOString();
    const answer = (
      await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, {
        reason: '  spam  ',
        until,
      })
    ).json();
    expect(answer).toMatchObject({
      id: user.user.id,
      username: user.user.username,
      roles: ['user'],
      suspension: { reason: 'spam', suspended_until: until, suspended_by: by.user.id },
    });
    const loggedIn = await login(app(), user.user.username);
    expect([loggedIn.statusCode, loggedIn.json()]).toEqual([403, refusal(until)]);
    const refreshed = await refresh(user);
    expect([refreshed.statusCode, refreshed.json()]).toEqual([403, refusal(until)]);
    const me = await expectStatusOf(user.access_token);
    expect(me).toBe(401);
    expect(
      await queryRows(app().db, 'select revoked_reason from sessions where user_id = ?', [user.user.id]),
    ).toEqual([{ revoked_reason: 'suspended' }]);
  });

  const expectStatusOf = async (token: string) =>
    (
      await app().http.inject({
        method: 'GET',
        url: '/api/users/me',
        headers: { authorization: `Bearer ${token}` },
      })
    ).statusCode;

  it('suspends without until until lifted: until is null, and lifting lets the account sign in again', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, { reason: 'abuse' });
    const loggedIn = await login(app(), user.user.username);
    expect([loggedIn.statusCode, loggedIn.json()]).toEqual([403, refusal(null)]);
    const lifted = (
      await expectStatus(200, 'DELETE', `/api/admin/users/${user.user.id}/suspension`, by)
    ).json();
    expect(lifted.suspension).toBeNull();
    expect((await login(app(), user.user.username)).statusCode).toBe(200);
    // The sessions the suspension revoked stay revoked.
    expect((await refresh(user)).statusCode).toBe(401);
  });

  it('records the suspension and its lifting in the audit log with the suspension before and after', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, { reason: 'abuse' });
    await expectStatus(200, 'DELETE', `/api/admin/users/${user.user.id}/suspension`, by);
    // Lifting what is not in force records nothing.
    await expectStatus(200, 'DELETE', `/api/admin/users/${user.user.id}/suspension`, by);
    const suspension = {
      reason: 'abuse',
      suspended_at: expect.any(String),
      suspended_until: null,
      suspended_by: by.user.id,
    };
    expect(await auditEntriesOf(app().db, user.user.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: by.user.id,
        action: 'users.suspend',
        target_type: 'user',
        target_id: user.user.id,
        before: { suspension: null },
        after: { suspension },
      },
      expect.objectContaining({
        action: 'users.unsuspend',
        before: { suspension },
        after: { suspension: null },
      }),
    ]);
  });

  it('lifts itself once until has passed: login works and the account shows no suspension', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, {
      reason: 'cool down',
      until: new Date(Date.now() + HOUR).toISOString(),
    });
    expect((await login(app(), user.user.username)).statusCode).toBe(403);
    await queryRows(app().db, `update users set suspended_until = now() - interval '1 second' where id = ?`, [
      user.user.id,
    ]);
    const fresh = await login(app(), user.user.username);
    expect(fresh.statusCode).toBe(200);
    expect((await refresh(fresh.json())).statusCode).toBe(200);
    expect(
      (await expectStatus(200, 'GET', `/api/admin/users/${user.user.id}`, by)).json().suspension,
    ).toBeNull();
  });

  it('lets a moderator suspend a user, but not an admin or a moderator (403), and nobody themselves (409), writing nothing', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const [other, target, user] = [
      await admin(),
      await registerWithRole(app(), 'moderator'),
      await registerUser(app()),
    ];
    for (const staff of [other, target]) {
      const before = await stateOf(staff.user.id);
      const refused = await suspend(moderator, staff.user.id);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
      expect(await stateOf(staff.user.id)).toEqual(before);
    }
    const own = await stateOf(other.user.id);
    const self = await suspend(other, other.user.id);
    expect([self.statusCode, self.json().code]).toEqual([409, 'CONFLICT']);
    expect(await stateOf(other.user.id)).toEqual(own);
    await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, moderator, {
      reason: 'spam',
    });
    await expectStatus(200, 'POST', `/api/admin/users/${target.user.id}/suspension`, other, {
      reason: 'spam',
    });
  });

  it("lets only an admin lift an admin's or a moderator's suspension: a moderator gets 403 and it stays in force, unaudited", async () => {
    const [by, moderator] = [await admin(), await registerWithRole(app(), 'moderator')];
    const [staff, user] = [
      [await admin(), await registerWithRole(app(), 'moderator')],
      await registerUser(app()),
    ];
    for (const target of [...staff, user])
      await expectStatus(200, 'POST', `/api/admin/users/${target.user.id}/suspension`, by, { reason: 'r' });
    for (const target of staff) {
      const before = await stateOf(target.user.id);
      const refused = await unsuspend(moderator, target.user.id);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
      expect(await stateOf(target.user.id)).toEqual(before);
      expect((await login(app(), target.user.username)).statusCode).toBe(403);
      const lifted = await expectStatus(200, 'DELETE', `/api/admin/users/${target.user.id}/suspension`, by);
      expect(lifted.json().suspension).toBeNull();
    }
    const lifted = await expectStatus(
      200,
      'DELETE',
      `/api/admin/users/${user.user.id}/suspension`,
      moderator,
    );
    expect(lifted.json().suspension).toBeNull();
    expect((await auditEntriesOf(app().db, user.user.id)).at(-1)).toMatchObject({
      actor_id: moderator.user.id,
      action: 'users.unsuspend',
    });
  });

  it('refuses users without a moderating role with 403 FORBIDDEN, writing nothing', async () => {
    const [plain, user] = [await registerUser(app()), await registerUser(app())];
    const before = await stateOf(user.user.id);
    for (const refused of [await suspend(plain, user.user.id), await unsuspend(plain, user.user.id)]) {
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await stateOf(user.user.id)).toEqual(before);
    expect((await refresh(user)).statusCode).toBe(200);
  });

  it.each([
    ['no reason', {}, 'reason'],
    ['an empty reason', { reason: '' }, 'reason'],
    ['a reason of only spaces', { reason: '   ' }, 'reason'],
    ['a reason over 500 characters', { reason: 'x'.repeat(501) }, 'reason'],
    ['a reason holding U+0000', { reason: 'a\u0000b' }, 'reason'],
    ['an until in the past', { reason: 'r', until: new Date(Date.now() - HOUR).toISOString() }, 'until'],
    [
      'an until over 10 years ahead',
      { reason: 'r', until: new Date(Date.now() + 11 * 366 * 24 * HOUR).toISOString() },
      'until',
    ],
    ['an until that is no time', { reason: 'r', until: 'tomorrow' }, 'until'],
    ['an unknown field', { reason: 'r', days: 3 }, ''],
  ])('refuses %s with 422 VALIDATION_FAILED, writing nothing', async (_what, payload, path) => {
    const [by, user] = [await admin(), await registerUser(app())];
    const before = await stateOf(user.user.id);
    const refused = await suspend(by, user.user.id, payload);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    if (path) expect(JSON.stringify(refused.json().errors)).toContain(path);
    expect(await stateOf(user.user.id)).toEqual(before);
  });

  it('answers 404 NOT_FOUND for an unknown account or an id that cannot name one', async () => {
    const by = await admin();
    for (const id of ['00000000-0000-7000-8000-000000000000', 'nobody']) {
      const refused = await suspend(by, id);
      expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
      expect((await account(by, id)).statusCode).toBe(404);
    }
  });

  it('refuses a login that raced a suspension, leaving none of its sessions open', async () => {
    const user = await registerUser(app());
    let answer: Promise<LightMyRequestResponse> | undefined;
    // As a suspension does: the account's row locked, the suspension written, then committed.
    await whileTransactionOpen(
      app,
      async (tx) => {
        await executeBound(tx, 'select 1 from users where id = $1 for update', [user.user.id]);
        await executeBound(
          tx,
          `update users set suspended_at = now(), suspension_reason = 'race' where id = $1`,
          [user.user.id],
        );
        await executeBound(tx, `update sessions set revoked_at = now() where user_id = $1`, [user.user.id]);
      },
      () => {
        answer = login(app(), user.user.username);
      },
    );
    const refused = await (answer as Promise<LightMyRequestResponse>);
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'ACCOUNT_SUSPENDED']);
    expect(
      await queryRows(app().db, 'select id from sessions where user_id = ? and revoked_at is null', [
        user.user.id,
      ]),
    ).toEqual([]);
  });

  it('leaves a wrong password answered 401 for a suspended account, telling nothing of the suspension', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, { reason: 'spam' });
    const wrong = await login(app(), user.user.username, `${PASSWORD}!`);
    expect([wrong.statusCode, wrong.json().code]).toEqual([401, 'INVALID_CREDENTIALS']);
  });
});

describe('a suspended account on a cluster', () => {
  it("closes the account's sockets with 4403 on every node, and only its own", async () => {
    const cluster = await buildTestCluster(2);
    try {
      const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
      const by = await registerWithRole(a, 'admin');
      const [user, other] = [await registerUser(a), await registerUser(a)];
      const onA = await authedSocket(a.wsUrl, user.access_token);
      const onB = await authedSocket(b.wsUrl, user.access_token);
      const unrelated = await authedSocket(b.wsUrl, other.access_token);
      const { expectStatus } = adminCalls(() => a);
      await expectStatus(200, 'POST', `/api/admin/users/${user.user.id}/suspension`, by, { reason: 'raid' });
      expect((await onB.closed).code).toBe(4403);
      expect((await onA.closed).code).toBe(4403);
      expect((await request(unrelated, 'presence.heartbeat')).t).toBe('ack');
      unrelated.close();
    } finally {
      await cluster.close();
    }
  });
});
