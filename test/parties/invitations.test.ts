import { describe, expect, it, vi } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { useTestApp } from '../helpers/app.js';
import { partyCalls } from './parties.js';

describe('invitations and joins', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 100_000 });
  const { expectStatus, users, createParty, joined, invited, partyOf, stateOf, refused } = partyCalls(app);
  const join = (partyId: string) => `/api/parties/${partyId}/join`;
  const invites = (partyId: string) => `/api/parties/${partyId}/invites`;

  it('lets anyone join an open party, and hides a closed one from the uninvited behind 404', async () => {
    const [leader, joiner, outsider] = await users(3);
    const open = await createParty(leader, { open: true });
    expect((await joined(joiner, open.id)).members).toHaveLength(2);
    const [closedLeader] = await users(1);
    const closed = await createParty(closedLeader);
    const before = await stateOf([closed.id], [outsider.user.id]);
    await refused(404, 'NOT_FOUND', 'POST', join(closed.id), outsider);
    expect(await stateOf([closed.id], [outsider.user.id])).toEqual(before);
  });

  it('admits an invited user to a closed party once: the join uses the invitation', async () => {
    const [leader, guest] = await users(2);
    const party = await createParty(leader);
    const invite = await invited(leader, party.id, guest);
    expect(invite).toEqual({
      party_id: party.id,
      user_id: guest.user.id,
      invited_by: leader.user.id,
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });
    // PARTY_INVITE_TTL_SECONDS: 600 by default.
    expect(Date.parse(invite.expires_at) - Date.parse(invite.created_at)).toBe(600_000);
    expect((await joined(guest, party.id)).members.map((m) => m.user_id)).toEqual([
      leader.user.id,
      guest.user.id,
    ]);
    expect((await stateOf([party.id])).invites).toEqual([]);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, guest);
    await refused(404, 'NOT_FOUND', 'POST', join(party.id), guest);
  });

  it('lets any member of an open party invite, and only the leader of a closed one (403 for the others)', async () => {
    const [leader, member, guest, other] = await users(4);
    const party = await partyOf(leader, [member]);
    await invited(member, party.id, guest);
    await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { open: false });
    const before = await stateOf([party.id], [other.user.id]);
    await refused(403, 'FORBIDDEN', 'POST', invites(party.id), member, { user_id: other.user.id });
    expect(await stateOf([party.id], [other.user.id])).toEqual(before);
    await invited(leader, party.id, other);
  });

  it('refuses invitees in order: yourself 422, unknown 404, a member 409, a block either way 403, writing nothing', async () => {
    const [leader, member, blocker, blocked] = await users(4);
    const party = await partyOf(leader, [member]);
    await expectStatus(204, 'PUT', `/api/blocks/${leader.user.id}`, blocker);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, leader);
    const before = await stateOf([party.id]);
    const url = invites(party.id);
    await refused(422, 'VALIDATION_FAILED', 'POST', url, leader, { user_id: leader.user.id });
    for (const user_id of [newId(), 'nobody'])
      await refused(404, 'NOT_FOUND', 'POST', url, leader, { user_id });
    await refused(409, 'CONFLICT', 'POST', url, leader, { user_id: member.user.id });
    await refused(403, 'FORBIDDEN', 'POST', url, leader, { user_id: blocker.user.id });
    await refused(403, 'FORBIDDEN', 'POST', url, leader, { user_id: blocked.user.id });
    for (const body of [{}, { user_id: 7 }, { user_id: member.user.id, note: 'hi' }])
      await refused(422, 'VALIDATION_FAILED', 'POST', url, leader, body);
    expect(await stateOf([party.id])).toEqual(before);
  });

  it('renews an invitation sent again, as one row with a later expiry', async () => {
    const [leader, member, guest] = await users(3);
    const party = await partyOf(leader, [member]);
    const first = await invited(leader, party.id, guest);
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(first.created_at)));
    const again = await invited(member, party.id, guest);
    expect(Date.parse(again.expires_at)).toBeGreaterThan(Date.parse(first.expires_at));
    expect(again.invited_by).toBe(member.user.id);
    expect((await stateOf([party.id])).invites).toHaveLength(1);
  });

  it('lets a user in another party be invited: the join is 409 until they leave it, the invitation staying', async () => {
    const [leader, guest, otherLeader] = await users(3);
    const party = await createParty(leader);
    const other = await createParty(otherLeader, { open: true });
    await joined(guest, other.id);
    await invited(leader, party.id, guest);
    const before = await stateOf([party.id, other.id]);
    await refused(409, 'ALREADY_IN_PARTY', 'POST', join(party.id), guest);
    expect(await stateOf([party.id, other.id])).toEqual(before);
    await expectStatus(204, 'POST', `/api/parties/${other.id}/leave`, guest);
    await joined(guest, party.id);
  });

  it('checks a join in order: a member 409, uninvited to a closed party 404, in another party 409, a block 403, full 409 PARTY_FULL', async () => {
    const [leader, member, elsewhere, blocker, guest, late] = await users(6);
    const party = await createParty(leader, { max_size: 3 });
    await invited(leader, party.id, member);
    await joined(member, party.id);
    // A member of the closed party is told they are in it, not that it is hidden.
    await refused(409, 'ALREADY_IN_PARTY', 'POST', join(party.id), member);
    // Uninvited and in another party: the closed party is not revealed.
    const [otherLeader] = await users(1);
    const other = await createParty(otherLeader, { open: true });
    await joined(elsewhere, other.id);
    await refused(404, 'NOT_FOUND', 'POST', join(party.id), elsewhere);
    // A block between the joiner and any member, either way.
    await expectStatus(204, 'PUT', `/api/blocks/${member.user.id}`, blocker);
    await invited(leader, party.id, blocker);
    await refused(403, 'FORBIDDEN', 'POST', join(party.id), blocker);
    await invited(leader, party.id, guest);
    await invited(leader, party.id, late);
    await joined(guest, party.id);
    const before = await stateOf([party.id], [late.user.id, blocker.user.id]);
    await refused(409, 'PARTY_FULL', 'POST', join(party.id), late);
    // Refused joins write nothing: the pending invitations stay.
    expect(await stateOf([party.id], [late.user.id, blocker.user.id])).toEqual(before);
    expect(before.invites.map((row) => row.user_id).sort()).toEqual([blocker.user.id, late.user.id].sort());
  });

  it('refuses a join by a member who blocked a member of the party with 403', async () => {
    const [leader, joiner] = await users(2);
    const party = await createParty(leader, { open: true });
    await expectStatus(204, 'PUT', `/api/blocks/${leader.user.id}`, joiner);
    await refused(403, 'FORBIDDEN', 'POST', join(party.id), joiner);
    expect((await stateOf([party.id])).members).toHaveLength(1);
  });
});

describe('invitation expiry', () => {
  const app = useTestApp({ PARTY_INVITE_TTL_SECONDS: 1 });
  const { users, createParty, invited, stateOf, refused } = partyCalls(app);

  it('stops admitting with an invitation once PARTY_INVITE_TTL_SECONDS passed', async () => {
    const [leader, guest] = await users(2);
    const party = await createParty(leader);
    const invite = await invited(leader, party.id, guest);
    expect(Date.parse(invite.expires_at) - Date.parse(invite.created_at)).toBe(1000);
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(invite.expires_at)), {
      timeout: 10_000,
      interval: 50,
    });
    await refused(404, 'NOT_FOUND', 'POST', `/api/parties/${party.id}/join`, guest);
    expect((await stateOf([party.id])).members).toHaveLength(1);
  });
});

describe('the invitation rate', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 2, SOCIAL_RATE_LIMIT_WINDOW_SECONDS: 3600 });
  const { expectStatus, users, createParty, invited, stateOf } = partyCalls(app);

  it('answers 429 with Retry-After past SOCIAL_RATE_LIMIT_COUNT invitations, apart from friend requests', async () => {
    const [leader, a, b, c] = await users(4);
    const party = await createParty(leader);
    await invited(leader, party.id, a);
    await invited(leader, party.id, b);
    const before = await stateOf([party.id]);
    const refused = await expectStatus(429, 'POST', `/api/parties/${party.id}/invites`, leader, {
      user_id: c.user.id,
    });
    expect(refused.json().code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await stateOf([party.id])).toEqual(before);
    // Friend requests count in a limiter of their own.
    await expectStatus(201, 'POST', '/api/friends/requests', leader, { user_id: c.user.id });
  });

  it('spends nothing on a refused invitation', async () => {
    const [leader, member] = await users(2);
    const party = await createParty(leader, { open: true });
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, member);
    for (let i = 0; i < 3; i++)
      await expectStatus(409, 'POST', `/api/parties/${party.id}/invites`, leader, {
        user_id: member.user.id,
      });
    const [guest] = await users(1);
    await invited(leader, party.id, guest);
  });
});
