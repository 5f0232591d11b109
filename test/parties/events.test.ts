import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { AtriumClient } from '../../protocol/client.js';
import type { Party } from '../../protocol/parties.js';
import { PASSWORD } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, type ReceivedFrame, type TestSocket } from '../helpers/ws-client.js';
import { partyCalls } from './parties.js';

type Position = { offset: number; epoch: string };

const partyEvent =
  (t: string, check: (d: Record<string, unknown>) => boolean = () => true) =>
  (frame: ReceivedFrame) =>
    frame.t === t && check(frame.d as Record<string, unknown>);
const updatedWith = (memberIds: readonly string[]) =>
  partyEvent('party.updated', (d) => {
    const ids = (d.party as Party).members.map((member) => member.user_id);
    return ids.length === memberIds.length && memberIds.every((id) => ids.includes(id));
  });

describe('party events on the gateway', () => {
  const app = useTestApp();
  const sockets = openedSockets(() => app().wsUrl);
  const { expectStatus, users, createParty, joined, invited } = partyCalls(app);
  afterAll(() => sockets.closeAll());

  const listening = <T extends readonly TokenResponse[]>(accounts: readonly [...T]) =>
    Promise.all(accounts.map((u) => sockets.open(u.access_token))) as Promise<{ [K in keyof T]: TestSocket }>;

  it('tells the invitee of an invitation and of its renewal', async () => {
    const [leader, guest] = await users(2);
    const [guestSocket] = await listening([guest]);
    const party = await createParty(leader);
    const invite = await invited(leader, party.id, guest);
    const event = await guestSocket.next(partyEvent('party.invite'));
    expect(event.d).toEqual({
      party_id: party.id,
      from: { user_id: leader.user.id, username: leader.user.username },
      expires_at: invite.expires_at,
    });
    expect(event.pos).toMatchObject({ offset: expect.any(Number), epoch: expect.any(String) });
    await invited(leader, party.id, guest);
    await guestSocket.next(partyEvent('party.invite'));
  });

  it('tells every member of a join, a PATCH and a leader change, with the party as it is after', async () => {
    const [leader, member] = await users(2);
    const [leaderSocket, memberSocket] = await listening([leader, member]);
    const party = await createParty(leader, { open: true });
    const afterJoin = await joined(member, party.id);
    for (const socket of [leaderSocket, memberSocket])
      expect((await socket.next(partyEvent('party.updated'))).d).toEqual({ party: afterJoin });
    const patched = (
      await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { max_size: 4 })
    ).json();
    for (const socket of [leaderSocket, memberSocket])
      expect((await socket.next(partyEvent('party.updated'))).d).toEqual({ party: patched });
    const handed = (
      await expectStatus(200, 'POST', `/api/parties/${party.id}/leader`, leader, {
        user_id: member.user.id,
      })
    ).json();
    for (const socket of [leaderSocket, memberSocket])
      expect((await socket.next(partyEvent('party.updated'))).d).toEqual({ party: handed });
  });

  it('tells the remaining members and the kicked or leaving user, and the last member of the end', async () => {
    const [leader, kicked, leaver] = await users(3);
    const [leaderSocket, kickedSocket, leaverSocket] = await listening([leader, kicked, leaver]);
    const party = await createParty(leader, { open: true });
    await joined(kicked, party.id);
    await joined(leaver, party.id);
    await leaderSocket.next(updatedWith([leader.user.id, kicked.user.id, leaver.user.id]));
    await expectStatus(204, 'DELETE', `/api/parties/${party.id}/members/${kicked.user.id}`, leader);
    const remaining = [leader.user.id, leaver.user.id];
    for (const socket of [leaderSocket, kickedSocket, leaverSocket])
      await socket.next(updatedWith(remaining));
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leader);
    for (const socket of [leaderSocket, leaverSocket]) {
      const event = await socket.next(updatedWith([leaver.user.id]));
      expect((event.d as { party: Party }).party.leader_id).toBe(leaver.user.id);
    }
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leaver);
    const ended = await leaverSocket.next(partyEvent('party.ended'));
    expect(ended.d).toEqual({ party_id: party.id });
    // The end goes to the last member only, and as no update: what the leaver has besides came before it.
    expect(leaderSocket.frames.filter((f) => f.t === 'party.ended')).toEqual([]);
    const endedAt = (ended.pos as Position).offset;
    const later = leaverSocket.frames.filter(
      (f) => f.t === 'party.updated' && (f.pos as Position).offset > endedAt,
    );
    expect(later).toEqual([]);
  });

  it("tells the members of a deleted account's removal, leadership passed on", async () => {
    const [leader, member] = await users(2);
    const [memberSocket] = await listening([member]);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    await expectStatus(204, 'DELETE', '/api/users/me', leader, { password: PASSWORD });
    const event = await memberSocket.next(updatedWith([member.user.id]));
    expect((event.d as { party: Party }).party).toMatchObject({ id: party.id, leader_id: member.user.id });
  });

  it('replays the party events a socket missed when it reconnects with its last position', async () => {
    const [leader, member, guest] = await users(3);
    const [memberSocket] = await listening([member]);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    const last = (await memberSocket.next(partyEvent('party.updated'))).pos as Position;
    memberSocket.close();
    await memberSocket.closed;
    await joined(guest, party.id);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leader);
    const socket: TestSocket = await sockets.open();
    socket.sendFrame({ t: 'auth', id: 1, d: { token: member.access_token, recover: last } });
    const ack = await socket.next((f) => f.id === 1);
    expect(ack).toMatchObject({ t: 'ack', d: { recovered: true } });
    const replayed = socket.frames.filter((f) => f.t === 'party.updated');
    expect(replayed.map((f) => (f.d as { party: Party }).party.members.length)).toEqual([3, 2]);
    expect(replayed.map((f) => (f.pos as Position).offset)).toEqual([last.offset + 1, last.offset + 2]);
    expect(replayed[1]?.d).toMatchObject({ party: { leader_id: member.user.id } });
  });

  it('gives the typed client every operation and the events, over REST', async () => {
    const [leader, guest] = await users(2);
    const guestClient = new AtriumClient({
      httpUrl: app().httpUrl,
      wsUrl: app().wsUrl,
      WebSocket,
      accessToken: guest.access_token,
    });
    const leaderClient = new AtriumClient({ httpUrl: app().httpUrl, accessToken: leader.access_token });
    try {
      await guestClient.ready();
      const invitations: { party_id: string }[] = [];
      const heard = new Promise<void>((resolve) =>
        guestClient.on('party.invite', (d) => {
          invitations.push(d);
          resolve();
        }),
      );
      const party = await leaderClient.call('parties.create', { max_size: 3 });
      await leaderClient.call('parties.invite', { party_id: party.id, user_id: guest.user.id });
      await heard;
      expect(invitations).toEqual([expect.objectContaining({ party_id: party.id })]);
      const mine = await leaderClient.call('parties.mine', undefined);
      expect(mine.id).toBe(party.id);
      await expect(guestClient.call('parties.mine', undefined)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      guestClient.close();
      leaderClient.close();
    }
  });
});
