import { describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { PASSWORD } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { partyCalls } from './parties.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

// One app for the file: its parts need the same settings, and each test makes its own users.
const app = useTestApp();

describe('creating and reading parties', () => {
  const { call, expectStatus, users, createParty, joined, stateOf, refused } = partyCalls(app);

  it('creates a closed party of 8 by default, with the caller as its leader and only member', async () => {
    const [leader] = await users(1);
    const party = await createParty(leader);
    expect(party).toEqual({
      id: expect.any(String),
      leader_id: leader.user.id,
      open: false,
      max_size: 8,
      members: [{ user_id: leader.user.id, username: leader.user.username, joined_at: expect.any(String) }],
      created_at: expect.any(String),
    });
    expect((await expectStatus(200, 'GET', '/api/parties/me', leader)).json()).toEqual(party);
    expect((await expectStatus(200, 'GET', `/api/parties/${party.id}`, leader)).json()).toEqual(party);
  });

  it('takes open and max_size from an optional body, an empty one included', async () => {
    const [first, second] = await users(2);
    expect(await createParty(first, { open: true, max_size: 2 })).toMatchObject({ open: true, max_size: 2 });
    expect(await createParty(second, {})).toMatchObject({ open: false, max_size: 8 });
  });

  it('refuses a body with unknown keys or values out of range with 422, creating nothing', async () => {
    const [user] = await users(1);
    for (const body of [
      { max_size: 1 },
      { max_size: 17 },
      { max_size: 2.5 },
      { max_size: '4' },
      { open: 'yes' },
      { open: true, leader_id: user.user.id },
      [],
    ]) {
      await refused(422, 'VALIDATION_FAILED', 'POST', '/api/parties', user, body);
    }
    expect((await stateOf([], [user.user.id])).members).toEqual([]);
  });

  it('refuses a second party, or a party while a member of another, with 409 ALREADY_IN_PARTY', async () => {
    const [leader, member] = await users(2);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    const before = await stateOf([party.id], [leader.user.id, member.user.id]);
    await refused(409, 'ALREADY_IN_PARTY', 'POST', '/api/parties', leader);
    await refused(409, 'ALREADY_IN_PARTY', 'POST', '/api/parties', member, { open: true });
    expect(await stateOf([party.id], [leader.user.id, member.user.id])).toEqual(before);
  });

  it('answers GET /api/parties/me with 404 for a user in no party', async () => {
    const [user] = await users(1);
    await refused(404, 'NOT_FOUND', 'GET', '/api/parties/me', user);
  });

  it('lists members longest-standing first, the leader among them', async () => {
    const [leader, first, second] = await users(3);
    const party = await createParty(leader, { open: true });
    await joined(first, party.id);
    const seen = await joined(second, party.id);
    expect(seen.members.map((member) => member.user_id)).toEqual([
      leader.user.id,
      first.user.id,
      second.user.id,
    ]);
    expect((await expectStatus(200, 'GET', `/api/parties/${party.id}`, second)).json()).toEqual(seen);
  });

  it('shows a party to its members alone: anyone else gets the 404 of an unknown id on every route', async () => {
    const [leader, outsider, other] = await users(3);
    const party = await createParty(leader, { open: true });
    const before = await stateOf([party.id]);
    const routes = (id: string): [Method, string, object?][] => [
      ['GET', `/api/parties/${id}`],
      ['PATCH', `/api/parties/${id}`, { open: false }],
      ['POST', `/api/parties/${id}/invites`, { user_id: other.user.id }],
      ['POST', `/api/parties/${id}/leave`],
      ['DELETE', `/api/parties/${id}/members/${leader.user.id}`],
      ['POST', `/api/parties/${id}/leader`, { user_id: leader.user.id }],
    ];
    for (const id of [party.id, newId(), 'not-an-id']) {
      for (const [method, url, body] of routes(id))
        await refused(404, 'NOT_FOUND', method, url, outsider, body);
    }
    await refused(404, 'NOT_FOUND', 'POST', `/api/parties/${newId()}/join`, outsider);
    await refused(404, 'NOT_FOUND', 'POST', '/api/parties/not-an-id/join', outsider);
    expect(await stateOf([party.id])).toEqual(before);
    // A path parameter past its length is a malformed request, refused before anything is read.
    await refused(422, 'VALIDATION_FAILED', 'GET', `/api/parties/${'x'.repeat(65)}`, outsider);
    // Nothing lists parties.
    expect((await call('GET', '/api/parties', outsider)).statusCode).toBe(405);
  });
});

describe('changing a party: PATCH, kicks and leader handover', () => {
  const { expectStatus, users, partyOf, stateOf, refused } = partyCalls(app);

  it('lets the leader change open and max_size', async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    const changed = (
      await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { open: false, max_size: 2 })
    ).json();
    expect(changed).toEqual({ ...party, open: false, max_size: 2 });
    expect(
      (await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { open: true })).json(),
    ).toEqual({ ...party, open: true, max_size: 2 });
  });

  it('refuses PATCH in order: 404 for a non-member, 403 for a member, 422 without a field, 409 below the member count', async () => {
    const [leader, first, second, outsider] = await users(4);
    const party = await partyOf(leader, [first, second]);
    const before = await stateOf([party.id]);
    const url = `/api/parties/${party.id}`;
    await refused(404, 'NOT_FOUND', 'PATCH', url, outsider, { max_size: 2 });
    await refused(403, 'FORBIDDEN', 'PATCH', url, first, { max_size: 2 });
    await refused(422, 'VALIDATION_FAILED', 'PATCH', url, leader, {});
    for (const body of [{ max_size: 17 }, { open: 1 }, { open: true, name: 'x' }])
      await refused(422, 'VALIDATION_FAILED', 'PATCH', url, leader, body);
    await refused(409, 'CONFLICT', 'PATCH', url, leader, { max_size: 2, open: false });
    expect(await stateOf([party.id])).toEqual(before);
    await expectStatus(200, 'PATCH', url, leader, { max_size: 3 });
  });

  it('lets the leader kick a member, who is then out of the party', async () => {
    const [leader, member, other] = await users(3);
    const party = await partyOf(leader, [member, other]);
    await expectStatus(204, 'DELETE', `/api/parties/${party.id}/members/${member.user.id}`, leader);
    const after = (await expectStatus(200, 'GET', `/api/parties/${party.id}`, leader)).json();
    expect(after.members.map((m: { user_id: string }) => m.user_id)).toEqual([leader.user.id, other.user.id]);
    await refused(404, 'NOT_FOUND', 'GET', `/api/parties/${party.id}`, member);
    await refused(404, 'NOT_FOUND', 'GET', '/api/parties/me', member);
  });

  it('refuses kicks in order: 404 non-member caller, 403 non-leader, 404 kicked non-member, 422 own id', async () => {
    const [leader, member, outsider] = await users(3);
    const party = await partyOf(leader, [member]);
    const before = await stateOf([party.id]);
    const kick = (id: string) => `/api/parties/${party.id}/members/${id}`;
    await refused(404, 'NOT_FOUND', 'DELETE', kick(member.user.id), outsider);
    await refused(403, 'FORBIDDEN', 'DELETE', kick(leader.user.id), member);
    await refused(403, 'FORBIDDEN', 'DELETE', kick(outsider.user.id), member);
    for (const id of [outsider.user.id, newId(), 'nobody'])
      await refused(404, 'NOT_FOUND', 'DELETE', kick(id), leader);
    await refused(422, 'VALIDATION_FAILED', 'DELETE', kick(leader.user.id), leader);
    expect(await stateOf([party.id])).toEqual(before);
  });

  it('lets the leader hand leadership to another member', async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    const handed = (
      await expectStatus(200, 'POST', `/api/parties/${party.id}/leader`, leader, {
        user_id: member.user.id.toUpperCase(),
      })
    ).json();
    expect(handed).toEqual({ ...party, leader_id: member.user.id });
    // The former leader is a member now, with a member's powers.
    await refused(403, 'FORBIDDEN', 'PATCH', `/api/parties/${party.id}`, leader, { open: false });
  });

  it('refuses handovers in order: 404 non-member caller, 403 non-leader, 404 non-member target, 422 own id', async () => {
    const [leader, member, outsider] = await users(3);
    const party = await partyOf(leader, [member]);
    const before = await stateOf([party.id]);
    const url = `/api/parties/${party.id}/leader`;
    await refused(404, 'NOT_FOUND', 'POST', url, outsider, { user_id: member.user.id });
    await refused(403, 'FORBIDDEN', 'POST', url, member, { user_id: member.user.id });
    await refused(404, 'NOT_FOUND', 'POST', url, leader, { user_id: outsider.user.id });
    await refused(404, 'NOT_FOUND', 'POST', url, leader, { user_id: 'nobody' });
    await refused(422, 'VALIDATION_FAILED', 'POST', url, leader, { user_id: leader.user.id });
    for (const body of [{}, { user_id: 5 }, { user_id: member.user.id, extra: 1 }])
      await refused(422, 'VALIDATION_FAILED', 'POST', url, leader, body);
    expect(await stateOf([party.id])).toEqual(before);
  });
});

describe('leaving and ending parties', () => {
  const { call, expectStatus, users, createParty, partyOf, invited, stateOf, refused } = partyCalls(app);

  it('promotes the longest-standing remaining member when the leader leaves', async () => {
    const [leader, first, second] = await users(3);
    const party = await partyOf(leader, [first, second]);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leader);
    const after = (await expectStatus(200, 'GET', `/api/parties/${party.id}`, second)).json();
    expect(after).toMatchObject({ leader_id: first.user.id });
    expect(after.members.map((m: { user_id: string }) => m.user_id)).toEqual([first.user.id, second.user.id]);
    // Leaving again: the caller is no member any more.
    await refused(404, 'NOT_FOUND', 'POST', `/api/parties/${party.id}/leave`, leader);
  });

  it('ends the party with its last member: every route answers 404 and its invitations are void', async () => {
    const [leader, member, guest] = await users(3);
    const party = await partyOf(leader, [member], { open: false });
    await invited(leader, party.id, guest);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leader);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, member);
    expect(await stateOf([party.id], [leader.user.id, member.user.id, guest.user.id])).toEqual({
      parties: [],
      members: [],
      invites: [],
    });
    for (const user of [leader, member]) {
      await refused(404, 'NOT_FOUND', 'GET', `/api/parties/${party.id}`, user);
      await refused(404, 'NOT_FOUND', 'POST', `/api/parties/${party.id}/leave`, user);
    }
    await refused(404, 'NOT_FOUND', 'POST', `/api/parties/${party.id}/join`, guest);
    // Free again: a new party of their own.
    await createParty(leader);
  });

  it("removes a deleted account's member as a leave: leadership passes on, and the last one ends the party", async () => {
    const [leader, member, loner] = await users(3);
    const party = await partyOf(leader, [member]);
    const solo = await createParty(loner);
    for (const user of [leader, loner]) {
      const deleted = await call('DELETE', '/api/users/me', user, { password: PASSWORD });
      expect(deleted.statusCode, deleted.body).toBe(204);
    }
    const after = (await expectStatus(200, 'GET', `/api/parties/${party.id}`, member)).json();
    expect(after).toMatchObject({ leader_id: member.user.id, members: [{ user_id: member.user.id }] });
    expect((await stateOf([solo.id])).parties).toEqual([]);
  });
});
