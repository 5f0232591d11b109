import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { recordAudit } from '../../src/modules/audit/index.js';
import { changeRole } from '../../src/modules/users/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { callsAs, PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { adminActionCalls } from './admin-actions.js';
import { auditEntriesOf } from './audit.js';

describe('the audit log', () => {
  const app = useTestApp();
  const { call, expectStatus } = callsAs(app);
  const data = () => app().db.data;
  const audit = (user: TokenResponse, query = '') => call('GET', `/api/admin/audit${query}`, user);

  /** Records `count` entries by `actorId` about a fresh target; answers the target's id. */
  const recorded = async (actorId: string, count: number, action = 'users.suspend') => {
    const target = newId();
    for (let i = 0; i < count; i++) {
      await recordAudit(data(), {
        actor: { kind: 'user', id: actorId },
        action,
        target: { type: 'user', id: target },
        before: { n: i },
        after: { n: i + 1 },
      });
    }
    return target;
  };

  it('refuses UPDATE, DELETE and TRUNCATE in the database, keeping the entries', async () => {
    const target = await recorded(newId(), 1);
    for (const sql of [
      `update audit_log set action = 'x' where target_id = '${target}'`,
      `delete from audit_log where target_id = '${target}'`,
      'truncate audit_log',
    ]) {
      await expect(executeBound(app().db.data, sql, []), sql).rejects.toThrow(/append-only/);
    }
    expect(await auditEntriesOf(app().db, target)).toHaveLength(1);
  });

  it("keeps an actor's entries after the actor's account is deleted", async () => {
    const actor = await registerUser(app());
    const target = await recorded(actor.user.id, 1);
    await expectStatus(204, 'DELETE', '/api/users/me', actor, { password: PASSWORD });
    expect(await auditEntriesOf(app().db, target)).toEqual([
      expect.objectContaining({ actor_kind: 'user', actor_id: actor.user.id }),
    ]);
  });

  it('records a role change of the CLI with actor cli and the roles before and after', async () => {
    const { user } = await registerUser(app());
    await changeRole(data(), user.username, 'moderator', 'grant');
    await changeRole(data(), user.username, 'moderator', 'revoke');
    expect(await auditEntriesOf(app().db, user.id)).toEqual([
      {
        actor_kind: 'cli',
        actor_id: null,
        action: 'users.roles.grant',
        target_type: 'user',
        target_id: user.id,
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

  it('lists entries to admins newest first in keyset pages, filtered by actor, target and action', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const actor = newId();
    const target = await recorded(actor, 3);
    await recorded(actor, 1, 'users.unsuspend');
    const first = (await expectStatus(200, 'GET', `/api/admin/audit?target=${target}&limit=2`, admin)).json();
    expect(first.items.map((e: { before: { n: number } }) => e.before.n)).toEqual([2, 1]);
    expect(first.items[0]).toMatchObject({
      actor_kind: 'user',
      actor_id: actor,
      action: 'users.suspend',
      target_type: 'user',
      target_id: target,
      after: { n: 3 },
      at: expect.any(String),
    });
    const second = (
      await expectStatus(
        200,
        'GET',
        `/api/admin/audit?target=${target}&limit=2&cursor=${first.next_cursor}`,
        admin,
      )
    ).json();
    expect(second.items.map((e: { before: { n: number } }) => e.before.n)).toEqual([0]);
    expect(second.next_cursor).toBeNull();
    const byActor = (await expectStatus(200, 'GET', `/api/admin/audit?actor=${actor}`, admin)).json();
    expect(byActor.items).toHaveLength(4);
    const byAction = (
      await expectStatus(200, 'GET', `/api/admin/audit?actor=${actor}&action=users.unsuspend`, admin)
    ).json();
    expect(byAction.items.map((e: { action: string }) => e.action)).toEqual(['users.unsuspend']);
    const byType = (
      await expectStatus(200, 'GET', `/api/admin/audit?target=${target}&target_type=report`, admin)
    ).json();
    expect(byType.items).toEqual([]);
  });

  it("shows a moderator only their own actions, and refuses another actor's with 403", async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const mine = await recorded(moderator.user.id, 1);
    const theirs = await recorded(newId(), 1);
    const own = (await expectStatus(200, 'GET', '/api/admin/audit', moderator)).json();
    expect(own.items.map((e: { target_id: string }) => e.target_id)).toEqual([mine]);
    const other = (await expectStatus(200, 'GET', `/api/admin/audit?target=${theirs}`, moderator)).json();
    expect(other.items).toEqual([]);
    const refused = await audit(moderator, `?actor=${newId()}`);
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
  });

  it('refuses users without a moderating role with 403 FORBIDDEN, and anonymous callers with 401', async () => {
    const refused = await audit(await registerUser(app()));
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    const anonymous = await app().http.inject({ method: 'GET', url: '/api/admin/audit' });
    expect(anonymous.statusCode).toBe(401);
  });

  it.each([
    ['an actor that is neither an account id nor an extension name', '?actor=Someone', 'actor'],
    ['an action of another shape', '?action=Users%20Suspend', 'action'],
    ['a limit over 100', '?limit=101', 'limit'],
    ['a cursor it never gave', '?cursor=bm90LWEta2V5', 'cursor'],
    ['an unknown filter', '?actor_kind=cli', ''],
  ])('answers 422 VALIDATION_FAILED to %s', async (_what, query, path) => {
    const refused = await audit(await registerWithRole(app(), 'admin'), query);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    if (path) expect(JSON.stringify(refused.json().errors)).toContain(path);
  });

  it("records an admin's cancel of another seller's listing once, and nothing for a seller's own cancel", async () => {
    const { expectStatus: send, listing, listingState } = adminActionCalls(app);
    const admin = await registerWithRole(app(), 'admin');
    const theirs = await listing();
    await send(204, 'DELETE', `/api/economy/listings/${theirs.listingId}`, admin);
    await send(204, 'DELETE', `/api/economy/listings/${theirs.listingId}`, admin);
    expect(await listingState(theirs.listingId)).toBe('cancelled');
    expect(await auditEntriesOf(app().db, theirs.listingId)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'economy.listings.cancel',
        target_type: 'listing',
        target_id: theirs.listingId,
        before: { state: 'active', seller_id: theirs.seller.user.id, item_id: expect.any(String) },
        after: { state: 'cancelled' },
      },
    ]);
    const own = await listing();
    await send(204, 'DELETE', `/api/economy/listings/${own.listingId}`, own.seller);
    expect(await listingState(own.listingId)).toBe('cancelled');
    expect(await auditEntriesOf(app().db, own.listingId)).toEqual([]);
  });

  it('writes nothing for a read', async () => {
    const before = await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from audit_log');
    await audit(await registerUser(app()));
    const after = await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from audit_log');
    expect(after).toEqual(before);
  });
});
