import { describe, expect, it } from 'vitest';
import { auditEntriesOf } from '../audit/audit.js';
import { login, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets } from '../helpers/ws-client.js';
import { adminCalls } from './admin.js';

describe('roles, sessions and account lookups for the console', () => {
  const app = useTestApp();
  const { grantRole, revokeRole, revokeSessions, account, accounts, refresh, stateOf, expectStatus } =
    adminCalls(app);
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  const admin = () => registerWithRole(app(), 'admin');

  it('grants and revokes a role, audited with the roles before and after; the token carries it from the next refresh', async () => {
    const [by, user] = [await admin(), await registerUser(app())];
    const granted = (
      await expectStatus(200, 'PUT', `/api/admin/users/${user.user.id}/roles/moderator`, by)
    ).json();
    expect(granted).toMatchObject({ id: user.user.id, roles: ['user', 'moderator'], suspension: null });
    const refreshed = (await refresh(user)).json();
    expect((await accounts(refreshed)).statusCode).toBe(200);
    const revoked = (
      await expectStatus(200, 'DELETE', `/api/admin/users/${user.user.id}/roles/moderator`, by)
    ).json();
    expect(revoked.roles).toEqual(['user']);
    expect(await auditEntriesOf(app().db, user.user.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: by.user.id,
        action: 'users.roles.grant',
        target_type: 'user',
        target_id: user.user.id,
        before: { roles: ['user'] },
        after: { roles: ['user', 'moderator'], role: 'moderator' },
      },
      expect.objectContaining({
        action: 'users.roles.revoke',
        before: { roles: ['user', 'moderator'] },
        after: { roles: ['user'], role: 'moderator' },
      }),
    ]);
  });

  it('refuses taking the user role (422), an unknown role (422) and an admin removing their own admin role (409), writing nothing', async () => {
    const by = await admin();
    const user = await registerUser(app());
    const before = await stateOf(user.user.id);
    for (const [refused, code] of [
      [await revokeRole(by, user.user.id, 'user'), 'VALIDATION_FAILED'],
      [await grantRole(by, user.user.id, 'owner'), 'VALIDATION_FAILED'],
    ] as const) {
      expect([refused.statusCode, refused.json().code]).toEqual([422, code]);
    }
    expect(await stateOf(user.user.id)).toEqual(before);
    const own = await stateOf(by.user.id);
    const self = await revokeRole(by, by.user.id, 'admin');
    expect([self.statusCode, self.json().code]).toEqual([409, 'CONFLICT']);
    expect(await stateOf(by.user.id)).toEqual(own);
    // Another admin may.
    await expectStatus(200, 'DELETE', `/api/admin/users/${by.user.id}/roles/admin`, await admin());
  });

  it('refuses role changes and session revocation to moderators and users with 403 FORBIDDEN, writing nothing', async () => {
    const user = await registerUser(app());
    const before = await stateOf(user.user.id);
    for (const caller of [await registerWithRole(app(), 'moderator'), await registerUser(app())]) {
      for (const refused of [
        await grantRole(caller, user.user.id, 'admin'),
        await revokeRole(caller, user.user.id, 'moderator'),
        await revokeSessions(caller, user.user.id),
      ]) {
        expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
      }
    }
    expect(await stateOf(user.user.id)).toEqual(before);
  });

  it('revokes every session of an account: refresh answers 401, its socket closes with 4403, and the audit log names the sessions', async () => {
    const by = await admin();
    const user = await registerUser(app());
    const second = (await login(app(), user.user.username)).json();
    const socket = await open(second.access_token);
    const answer = (
      await expectStatus(200, 'DELETE', `/api/admin/users/${user.user.id}/sessions`, by)
    ).json();
    expect(answer).toEqual({ revoked_sessions: 2 });
    expect((await socket.closed).code).toBe(4403);
    for (const tokens of [user, second]) expect((await refresh(tokens)).statusCode).toBe(401);
    expect(await auditEntriesOf(app().db, user.user.id)).toEqual([
      expect.objectContaining({
        actor_id: by.user.id,
        action: 'users.sessions.revoke',
        before: { open_sessions: [expect.any(String), expect.any(String)] },
        after: { open_sessions: [] },
      }),
    ]);
    // The account signs in again as usual.
    expect((await login(app(), user.user.username)).statusCode).toBe(200);
    closeAll();
  });

  it('finds accounts by a part of the username, case-insensitively, or by exact id, newest first in keyset pages', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const stem = uniqueUsername('find');
    const found = [];
    for (const n of [1, 2, 3]) found.push(await registerUser(app(), `${stem}_${n}`));
    const part = stem.slice(5).toUpperCase();
    const first = (
      await expectStatus(200, 'GET', `/api/admin/users?query=${part}&limit=2`, moderator)
    ).json();
    expect(first.items.map((u: { username: string }) => u.username)).toEqual([`${stem}_3`, `${stem}_2`]);
    expect(first.items[0]).toEqual({
      id: found[2]?.user.id,
      username: `${stem}_3`,
      created_at: expect.any(String),
      last_seen_at: null,
      roles: ['user'],
      suspension: null,
    });
    const rest = (
      await expectStatus(
        200,
        'GET',
        `/api/admin/users?query=${part}&limit=2&cursor=${first.next_cursor}`,
        moderator,
      )
    ).json();
    expect(rest.items.map((u: { username: string }) => u.username)).toEqual([`${stem}_1`]);
    expect(rest.next_cursor).toBeNull();
    const byId = (
      await expectStatus(200, 'GET', `/api/admin/users?query=${found[0]?.user.id}`, moderator)
    ).json();
    expect(byId.items.map((u: { id: string }) => u.id)).toEqual([found[0]?.user.id]);
    const wildcard = (await expectStatus(200, 'GET', `/api/admin/users?query=${stem}%25`, moderator)).json();
    expect(wildcard.items).toEqual([]);
  });

  it('shows one account to moderators with its sessions, newest first, and never a token', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const user = await registerUser(app());
    await login(app(), user.user.username);
    const detail = (await expectStatus(200, 'GET', `/api/admin/users/${user.user.id}`, moderator)).json();
    expect(detail).toMatchObject({
      id: user.user.id,
      username: user.user.username,
      roles: ['user'],
      suspension: null,
    });
    expect(detail.sessions).toHaveLength(2);
    expect(Object.keys(detail.sessions[0]).sort()).toEqual(
      ['created_at', 'expires_at', 'id', 'last_refreshed_at', 'revoked_at', 'revoked_reason'].sort(),
    );
    expect(JSON.stringify(detail)).not.toContain(user.refresh_token);
  });

  it('refuses the lookups to users without a moderating role with 403, and bad queries with 422', async () => {
    const plain = await registerUser(app());
    for (const refused of [await accounts(plain), await account(plain, plain.user.id)]) {
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    const by = await admin();
    for (const query of ['?cursor=bm9wZQ', '?limit=0', '?query=', `?query=${'x'.repeat(65)}`, '?name=x']) {
      const refused = await accounts(by, query);
      expect([refused.statusCode, refused.json().code], query).toEqual([422, 'VALIDATION_FAILED']);
    }
  });
});
