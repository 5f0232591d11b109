import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { AtriumClient } from '../../protocol/client.js';
import type { Party, PartyMessage } from '../../protocol/parties.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, type ReceivedFrame, request, type TestSocket } from '../helpers/ws-client.js';
import { partyChatCalls, partyMessage } from './party-chat.js';

type Position = { offset: number; epoch: string };
const offsetOf = (frame: ReceivedFrame) => (frame.pos as Position).offset;

describe('party chat events', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000 });
  const { expectStatus, users, partyOf, sent } = partyChatCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  /**
   * Waits until a direct message from `from` reaches `socket`: it is published on the user's topic
   * after everything published there before it, so what the socket was sent earlier has arrived.
   */
  const caughtUp = async (socket: TestSocket, from: TokenResponse, to: TokenResponse) => {
    const { id } = (
      await expectStatus(201, 'POST', `/api/chat/dm/${to.user.id}/messages`, from, { body: 'barrier' })
    ).json();
    return socket.next((f) => f.t === 'dm.message' && (f.d as { id: string }).id === id);
  };

  it("sends chat.message to every socket of every member, the sender's included, without a join, and to nobody else", async () => {
    const [leader, member, outsider] = await users(3);
    const party = await partyOf(leader, [member]);
    const listening = [
      await sockets.open(leader.access_token),
      await sockets.open(leader.access_token),
      await sockets.open(member.access_token),
    ];
    const outsiderSocket = await sockets.open(outsider.access_token);
    const message = await sent(leader, party.id, 'to the whole party');
    for (const socket of listening) {
      const event = await socket.next(partyMessage('to the whole party'));
      expect(event.d).toEqual(message);
      // On the member's own stream: recorded for recovery, not a chat's stream.
      expect(event.pos).toMatchObject({ offset: expect.any(Number), epoch: expect.any(String) });
      expect(event.pos).not.toHaveProperty('stream');
    }
    await caughtUp(outsiderSocket, leader, outsider);
    expect(outsiderSocket.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
  });

  it('gives the socket that sent with chat.sendToParty its ack and the chat.message of the same message', async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    const [senderSocket, memberSocket] = [
      await sockets.open(member.access_token),
      await sockets.open(leader.access_token),
    ];
    const ack = await request(senderSocket, 'chat.sendToParty', { party_id: party.id, body: 'from a frame' });
    expect(ack.t).toBe('ack');
    expect((await senderSocket.next(partyMessage('from a frame'))).d).toEqual(ack.d);
    expect((await memberSocket.next(partyMessage('from a frame'))).d).toEqual(ack.d);
  });

  it('replays the party messages a socket missed when it reconnects with its last position', async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, []);
    const socket = await sockets.open(member.access_token);
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, member);
    const last = (await socket.next((f) => f.t === 'party.updated')).pos as Position;
    socket.close();
    await socket.closed;
    const missed = [
      await sent(leader, party.id, 'while you were away'),
      await sent(leader, party.id, 'and this'),
    ];
    const again = await sockets.open();
    again.sendFrame({ t: 'auth', id: 1, d: { token: member.access_token, recover: last } });
    expect(await again.next((f) => f.id === 1)).toMatchObject({ t: 'ack', d: { recovered: true } });
    const replayed = again.frames.filter((f) => f.t === 'chat.message');
    expect(replayed.map((f) => f.d)).toEqual(missed);
    expect(replayed.map(offsetOf)).toEqual([last.offset + 1, last.offset + 2]);
  });

  it('stops sending the messages to a member who left, from their leave on', async () => {
    const [leader, member, leaver] = await users(3);
    const party = await partyOf(leader, [member, leaver]);
    const leaverSocket = await sockets.open(leaver.access_token);
    await sent(member, party.id, 'while you are here');
    await leaverSocket.next(partyMessage('while you are here'));
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leaver);
    const left = await leaverSocket.next(
      (f) => f.t === 'party.updated' && (f.d as { party: Party }).party.members.length === 2,
    );
    await sent(member, party.id, 'after you left');
    // Nothing came between the leave and the barrier on the leaver's stream.
    expect(offsetOf(await caughtUp(leaverSocket, leader, leaver))).toBe(offsetOf(left) + 1);
    expect(leaverSocket.frames.filter(partyMessage('after you left'))).toEqual([]);
  });

  it('gives the typed client the send over its socket, the history over REST and the chat.message event', async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    const client = new AtriumClient({
      httpUrl: app().httpUrl,
      wsUrl: app().wsUrl,
      WebSocket,
      accessToken: member.access_token,
    });
    const restClient = new AtriumClient({ httpUrl: app().httpUrl, accessToken: leader.access_token });
    try {
      await client.ready();
      const heard = new Promise<PartyMessage>((resolve) =>
        client.on('chat.message', (message) => {
          if ('party_id' in message) resolve(message);
        }),
      );
      const message = await client.call('chat.sendToParty', { party_id: party.id, body: 'typed' });
      expect(message).toMatchObject({ party_id: party.id, sender_id: member.user.id, body: 'typed' });
      expect(await heard).toEqual(message);
      const page = await restClient.call('chat.partyHistory', { party_id: party.id, limit: 10 });
      expect(page).toEqual({ items: [message], next_cursor: null });
    } finally {
      client.close();
      restClient.close();
    }
  });
});
