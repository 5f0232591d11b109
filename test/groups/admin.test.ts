import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { newId } from '../../src/platform/ids.js';
import { auditEntriesOf } from '../audit/audit.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, type ReceivedFrame, request } from '../helpers/ws-client.js';
import { groupCalls, uniqueGroupName } from './groups.js';

const ofType = (t: string) => (f: ReceivedFrame) => f.t === t;

/** The administration of groups (docs/groups.md, "Administration"). */
describe('groups administration', () => {
  const app = useTestApp();
  const { call, expectStatus, createGroup, cast, stateOf } = groupCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  const staff = async () => [
    await registerWithRole(app(), 'moderator'),
    await registerWithRole(app(), 'admin'),
  ];
  const remove = (by: TokenResponse, groupId: string, userId: string) =>
    call('DELETE', `/api/admin/groups/${groupId}/members/${userId}`, by);

  it('lists any group with its owner, join policy and member count to moderators and admins, in keyset pages', async () => {
    const { group, owner } = await cast();
    const prefix = uniqueGroupName('Admin');
    const second = await createGroup(owner, { name: `${prefix} b` });
    const first = await createGroup(owner, { name: `${prefix} a` });
    for (const caller of await staff()) {
      const found = (
        await expectStatus(200, 'GET', `/api/admin/groups?query=${encodeURIComponent(group.name)}`, caller)
      ).json();
      expect(found.items).toEqual([
        {
          ...group,
          join_policy: 'closed',
          member_count: 3,
          owner_id: owner.user.id,
        },
      ]);
      const page = (
        await expectStatus(
          200,
          'GET',
          `/api/admin/groups?query=${encodeURIComponent(prefix)}&limit=1`,
          caller,
        )
      ).json();
      expect(page.items.map((g: { id: string }) => g.id)).toEqual([first.id]);
      const next = (
        await expectStatus(
          200,
          'GET',
          `/api/admin/groups?query=${encodeURIComponent(prefix)}&limit=1&cursor=${page.next_cursor}`,
          caller,
        )
      ).json();
      expect(next.items.map((g: { id: string }) => g.id)).toEqual([second.id]);
      expect(next.next_cursor).toBeNull();
    }
  });

  it('refuses the list to users without a staff role with 403 FORBIDDEN', async () => {
    const refused = await call('GET', '/api/admin/groups', await registerUser(app()));
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
  });

  it.each([
    ['a limit over 100', '?limit=101', 'limit'],
    ['a cursor it never gave', '?cursor=bm90LWEta2V5', 'cursor'],
    ['a query over the name length', `?query=${'x'.repeat(65)}`, 'query'],
    ['an unknown filter', '?q=x', ''],
  ])('answers 422 VALIDATION_FAILED to %s', async (_what, query, path) => {
    const refused = await call(
      'GET',
      `/api/admin/groups${query}`,
      await registerWithRole(app(), 'moderator'),
    );
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    if (path) expect(JSON.stringify(refused.json().errors)).toContain(path);
  });

  it('lets a moderator read the roster of any group, closed ones included', async () => {
    const { group, owner, admin, member } = await cast();
    const [moderator] = await staff();
    const roster = (
      await expectStatus(200, 'GET', `/api/groups/${group.id}/members`, moderator as TokenResponse)
    ).json();
    expect(roster.items.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [owner.user.id, 'owner'],
      [admin.user.id, 'admin'],
      [member.user.id, 'member'],
    ]);
  });

  it("lets moderators and admins remove a member or a group's admin, as a kick the member's sockets hear, audited", async () => {
    const { group, admin, member } = await cast();
    const [moderator, siteAdmin] = (await staff()) as [TokenResponse, TokenResponse];
    const memberSocket = await sockets.open(member.access_token);
    expect(await request(memberSocket, 'chat.join', { group_id: group.id })).toMatchObject({ t: 'ack' });

    await expectStatus(204, 'DELETE', `/api/admin/groups/${group.id}/members/${member.user.id}`, moderator);
    const kicked = { group_id: group.id, user_id: member.user.id, by: moderator.user.id };
    expect((await memberSocket.next(ofType('group.member_kicked'))).d).toEqual(kicked);
    await expectStatus(204, 'DELETE', `/api/admin/groups/${group.id}/members/${admin.user.id}`, siteAdmin);

    const state = await stateOf(group.id);
    expect(state.members.map((m) => m.user_id)).not.toContain(member.user.id);
    expect(state.members.map((m) => m.user_id)).not.toContain(admin.user.id);
    expect(state.group?.member_count).toBe(1);
    expect(await auditEntriesOf(app().db, group.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: moderator.user.id,
        action: 'groups.members.remove',
        target_type: 'group',
        target_id: group.id,
        before: { user_id: member.user.id, role: 'member' },
        after: null,
      },
      expect.objectContaining({
        actor_id: siteAdmin.user.id,
        action: 'groups.members.remove',
        before: { user_id: admin.user.id, role: 'admin' },
      }),
    ]);
  });

  it('refuses to remove the owner with 409 CONFLICT, writing nothing', async () => {
    const { group, owner } = await cast();
    const [moderator] = (await staff()) as [TokenResponse];
    const before = await stateOf(group.id);
    const refused = await remove(moderator, group.id, owner.user.id);
    expect([refused.statusCode, refused.json().code]).toEqual([409, 'CONFLICT']);
    expect(await stateOf(group.id)).toEqual(before);
    expect(await auditEntriesOf(app().db, group.id)).toEqual([]);
  });

  it("refuses a removal to users without a staff role, the group's owner included, with 403 FORBIDDEN, writing nothing", async () => {
    const { group, owner, member } = await cast();
    const before = await stateOf(group.id);
    for (const caller of [owner, await registerUser(app())]) {
      const refused = await remove(caller, group.id, member.user.id);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
      const deleted = await call('DELETE', `/api/admin/groups/${group.id}`, caller);
      expect([deleted.statusCode, deleted.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await stateOf(group.id)).toEqual(before);
    expect(await auditEntriesOf(app().db, group.id)).toEqual([]);
  });

  it('answers 404 for a group or a member that does not exist, or a pending requester, writing nothing', async () => {
    const { group, requester, outsider } = await cast();
    const [moderator] = (await staff()) as [TokenResponse];
    const before = await stateOf(group.id);
    for (const [groupId, userId] of [
      [newId(), outsider.user.id],
      ['not-a-group', outsider.user.id],
      [group.id, outsider.user.id],
      [group.id, requester.user.id],
      [group.id, 'not-a-user'],
    ] as const) {
      const refused = await remove(moderator, groupId, userId);
      expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
    }
    for (const groupId of [newId(), 'not-a-group']) {
      const refused = await call('DELETE', `/api/admin/groups/${groupId}`, moderator);
      expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
    }
    expect(await stateOf(group.id)).toEqual(before);
    expect(await auditEntriesOf(app().db, group.id)).toEqual([]);
  });

  it('lets moderators and admins delete any group, telling its sockets, audited with the group as it was', async () => {
    for (const caller of await staff()) {
      const { group, owner, member } = await cast();
      const memberSocket = await sockets.open(member.access_token);
      expect(await request(memberSocket, 'chat.join', { group_id: group.id })).toMatchObject({ t: 'ack' });
      await expectStatus(204, 'DELETE', `/api/admin/groups/${group.id}`, caller);
      expect((await memberSocket.next(ofType('group.deleted'))).d).toEqual({ group_id: group.id });
      expect(await stateOf(group.id)).toEqual({ group: undefined, members: [], requests: [] });
      expect(await auditEntriesOf(app().db, group.id)).toEqual([
        {
          actor_kind: 'user',
          actor_id: caller.user.id,
          action: 'groups.delete',
          target_type: 'group',
          target_id: group.id,
          before: { ...group, join_policy: 'closed', member_count: 3, owner_id: owner.user.id },
          after: null,
        },
      ]);
    }
  });
});
