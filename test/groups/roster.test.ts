import { describe, expect, it } from 'vitest';
import { PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { groupCalls } from './groups.js';

describe('joining, requests and leaving', () => {
  const app = useTestApp({
    SOCIAL_RATE_LIMIT_COUNT: 100_000,
    CREATE_RATE_LIMIT_COUNT: 100_000,
    GROUP_MAX_MEMBERS: 3,
    GROUP_MAX_MEMBERSHIPS_PER_USER: 3,
  });
  const { call, expectStatus, createGroup, joined, requested, stateOf } = groupCalls(app);
  const requestsOf = async (owner: Parameters<typeof call>[2], groupId: string) =>
    (await expectStatus(200, 'GET', `/api/groups/${groupId}/requests`, owner)).json();

  it('lets a user join an open group once: a second join is 409 CONFLICT and changes nothing', async () => {
    const [owner, user] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    const member = await joined(user, group.id);
    expect(member).toEqual({
      user_id: user.user.id,
      username: user.user.username,
      role: 'member',
      joined_at: expect.any(String),
    });
    const before = await stateOf(group.id);
    expect(before.group?.member_count).toBe(2);
    const again = await call('POST', `/api/groups/${group.id}/members`, user);
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('CONFLICT');
    expect(await stateOf(group.id)).toEqual(before);
  });

  it('turns a join of a closed group into a request, listed oldest first, approved into a member', async () => {
    const [owner, first, second] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    const group = await createGroup(owner, { join_policy: 'closed' });
    await requested(first, group.id);
    await requested(second, group.id);
    const twice = await call('POST', `/api/groups/${group.id}/members`, first);
    expect([twice.statusCode, twice.json().code]).toEqual([409, 'CONFLICT']);
    expect((await requestsOf(owner, group.id)).items).toEqual([
      { user_id: first.user.id, username: first.user.username, created_at: expect.any(String) },
      { user_id: second.user.id, username: second.user.username, created_at: expect.any(String) },
    ]);
    const member = await expectStatus(
      201,
      'POST',
      `/api/groups/${group.id}/requests/${first.user.id}/approve`,
      owner,
    );
    expect(member.json()).toMatchObject({ user_id: first.user.id, role: 'member' });
    await expectStatus(204, 'POST', `/api/groups/${group.id}/requests/${second.user.id}/decline`, owner);
    const state = await stateOf(group.id);
    expect(state.requests).toEqual([]);
    expect(state.members.map((m) => m.user_id).sort()).toEqual([owner.user.id, first.user.id].sort());
    // A declined request is gone: approving it now finds nothing.
    const late = await call('POST', `/api/groups/${group.id}/requests/${second.user.id}/approve`, owner);
    expect([late.statusCode, late.json().code]).toEqual([404, 'NOT_FOUND']);
  });

  it('lets a requester withdraw their request with their own DELETE', async () => {
    const [owner, user] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner, { join_policy: 'closed' });
    await requested(user, group.id);
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${user.user.id}`, user);
    expect((await stateOf(group.id)).requests).toEqual([]);
    await expectStatus(404, 'DELETE', `/api/groups/${group.id}/members/${user.user.id}`, user);
  });

  it('replaces a pending request by the membership when the group opened meanwhile', async () => {
    const [owner, user] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner, { join_policy: 'closed' });
    await requested(user, group.id);
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'open' });
    await joined(user, group.id);
    const state = await stateOf(group.id);
    expect(state.requests).toEqual([]);
    expect(state.members).toHaveLength(2);
  });

  it('refuses a join past GROUP_MAX_MEMBERS with 409 GROUP_FULL, and an approval too, keeping the request', async () => {
    const owner = await registerUser(app());
    const group = await createGroup(owner);
    await joined(await registerUser(app()), group.id);
    await joined(await registerUser(app()), group.id);
    const late = await registerUser(app());
    const full = await call('POST', `/api/groups/${group.id}/members`, late);
    expect([full.statusCode, full.json().code]).toEqual([409, 'GROUP_FULL']);
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'closed' });
    await requested(late, group.id);
    const before = await stateOf(group.id);
    const approval = await call('POST', `/api/groups/${group.id}/requests/${late.user.id}/approve`, owner);
    expect([approval.statusCode, approval.json().code]).toEqual([409, 'GROUP_FULL']);
    expect(await stateOf(group.id)).toEqual(before);
  });

  it('refuses a membership past GROUP_MAX_MEMBERSHIPS_PER_USER (requests count) with 409 QUOTA_EXCEEDED', async () => {
    const user = await registerUser(app());
    // Each group by its own owner: an owner's own groups count for them too.
    const groupOfNewOwner = async (join_policy: 'open' | 'closed' = 'open') =>
      createGroup(await registerUser(app()), { join_policy });
    await requested(user, (await groupOfNewOwner('closed')).id);
    await joined(user, (await groupOfNewOwner()).id);
    await joined(user, (await groupOfNewOwner()).id);
    const fourth = await groupOfNewOwner();
    const refused = await call('POST', `/api/groups/${fourth.id}/members`, user);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect((await stateOf(fourth.id)).members).toHaveLength(1);
  });

  it('lets a member leave, but the owner only after a transfer (409 before)', async () => {
    const [owner, user] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    await joined(user, group.id);
    const ownerLeaves = await call('DELETE', `/api/groups/${group.id}/members/${owner.user.id}`, owner);
    expect([ownerLeaves.statusCode, ownerLeaves.json().code]).toEqual([409, 'CONFLICT']);
    const transferred = await expectStatus(200, 'POST', `/api/groups/${group.id}/transfer`, owner, {
      user_id: user.user.id,
    });
    expect(transferred.json()).toMatchObject({ owner_id: user.user.id, member_count: 2 });
    expect((await stateOf(group.id)).members).toEqual(
      expect.arrayContaining([
        { user_id: owner.user.id, role: 'admin' },
        { user_id: user.user.id, role: 'owner' },
      ]),
    );
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${owner.user.id}`, owner);
    expect(await stateOf(group.id)).toMatchObject({
      group: { member_count: 1 },
      members: [{ user_id: user.user.id }],
    });
  });

  it('refuses a transfer to a non-member with 404, changing nothing', async () => {
    const [owner, stranger] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    const notMember = await call('POST', `/api/groups/${group.id}/transfer`, owner, {
      user_id: stranger.user.id,
    });
    expect(notMember.statusCode).toBe(404);
    expect((await stateOf(group.id)).group?.owner_id).toBe(owner.user.id);
  });
});

describe('owner quota on transfers', () => {
  const app = useTestApp({ MAX_GROUPS_PER_USER: 1 });
  const { call, createGroup, joined, stateOf } = groupCalls(app);

  it('refuses to make a user who owns MAX_GROUPS_PER_USER groups an owner (409 QUOTA_EXCEEDED), changing nothing', async () => {
    const [owner, other] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    await createGroup(other);
    await joined(other, group.id);
    const before = await stateOf(group.id);
    const refused = await call('POST', `/api/groups/${group.id}/transfer`, owner, { user_id: other.user.id });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 1 });
    expect(await stateOf(group.id)).toEqual(before);
  });
});

describe('deletion rules', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 100_000 });
  const { call, expectStatus, createGroup, joined, setRole, stateOf } = groupCalls(app);
  const deleteAccount = (user: Parameters<typeof call>[2]) =>
    expectStatus(204, 'DELETE', '/api/users/me', user, { password: PASSWORD });

  it("keeps the group and its roster when the owner's account is deleted, with owner_id null", async () => {
    const [owner, admin, member] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    const group = await createGroup(owner);
    await joined(admin, group.id);
    await joined(member, group.id);
    await setRole(owner, group.id, admin.user.id, 'admin');
    await deleteAccount(owner);
    const state = await stateOf(group.id);
    expect(state.group).toMatchObject({ id: group.id, owner_id: null, member_count: 2 });
    expect(state.members).toEqual(
      [
        { user_id: admin.user.id, role: 'admin' },
        { user_id: member.user.id, role: 'member' },
      ].sort((a, b) => a.user_id.localeCompare(b.user_id)),
    );
  });

  it("deletes a member's rows (membership and requests) with their account and counts them out", async () => {
    const [owner, member] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    const closed = await createGroup(owner, { join_policy: 'closed' });
    await joined(member, group.id);
    await expectStatus(202, 'POST', `/api/groups/${closed.id}/members`, member);
    await deleteAccount(member);
    expect(await stateOf(group.id)).toMatchObject({
      group: { member_count: 1 },
      members: [{ user_id: owner.user.id }],
    });
    expect((await stateOf(closed.id)).requests).toEqual([]);
    expect(
      await queryRows(app().db, 'select 1 from group_members where user_id = ?', [member.user.id]),
    ).toEqual([]);
  });

  it('lets only the longest-standing admin claim an ownerless group', async () => {
    const owner = await registerUser(app());
    const [first, second, member] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    const group = await createGroup(owner);
    for (const user of [first, second, member]) await joined(user, group.id);
    // Promoted in the other order: what counts is how long they have been members.
    await setRole(owner, group.id, second.user.id, 'admin');
    await setRole(owner, group.id, first.user.id, 'admin');
    await deleteAccount(owner);
    for (const user of [second, member]) {
      const refused = await call('POST', `/api/groups/${group.id}/claim`, user);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    expect((await stateOf(group.id)).group?.owner_id).toBeNull();
    const claimed = await expectStatus(200, 'POST', `/api/groups/${group.id}/claim`, first);
    expect(claimed.json()).toMatchObject({ id: group.id, owner_id: first.user.id });
    expect((await stateOf(group.id)).members).toContainEqual({ user_id: first.user.id, role: 'owner' });
    const again = await call('POST', `/api/groups/${group.id}/claim`, second);
    expect([again.statusCode, again.json().code]).toEqual([409, 'CONFLICT']);
  });
});
