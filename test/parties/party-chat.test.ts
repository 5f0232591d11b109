import { afterEach, describe, expect, it } from 'vitest';
import type { PartyMessage } from '../../protocol/parties.js';
import { dmCalls } from '../chat/dm.js';
import { readAllPages } from '../chat/pages.js';
import { worldChatCalls } from '../chat/world-chat.js';
import { groupCalls } from '../groups/groups.js';
import { PASSWORD, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { moderationCalls } from '../moderation/moderation.js';
import { messagesUrl, partyChatCalls, UNKNOWN_ID } from './party-chat.js';

const cursorOf = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');

describe('party chat', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000 });
  const { call, expectStatus, users, partyOf, send, sent, history, rowsOf, writtenBy } = partyChatCalls(app);
  const moderation = moderationCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  /** An open party of a new leader with one more member. */
  const partyWithMember = async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    return { party, leader, member };
  };

  it("lets every member write a trimmed message (201), stored with the party's id and answered under the canonical id", async () => {
    const { party, leader, member } = await partyWithMember();
    const message = await sent(member, party.id.toUpperCase(), '  hello party  ');
    expect(message).toEqual({
      id: expect.any(String),
      party_id: party.id,
      sender_id: member.user.id,
      body: 'hello party',
      created_at: expect.any(String),
      filtered: false,
    });
    await sent(leader, party.id, 'hello back');
    expect(await rowsOf(party.id)).toEqual([
      { sender_id: member.user.id, body: 'hello party', filtered: false },
      { sender_id: leader.user.id, body: 'hello back', filtered: false },
    ]);
    const stored = await queryRows(
      app().db,
      'select world_id, room_id, conversation_id, group_id from messages where id = ?',
      [message.id],
    );
    expect(stored).toEqual([{ world_id: null, room_id: null, conversation_id: null, group_id: null }]);
  });

  it('sends with the chat.sendToParty frame and acks the stored message', async () => {
    const { party, member } = await partyWithMember();
    const socket = await sockets.open(member.access_token);
    const ack = await request(socket, 'chat.sendToParty', { party_id: party.id, body: ' over the socket ' });
    expect(ack).toMatchObject({
      t: 'ack',
      d: { party_id: party.id, sender_id: member.user.id, body: 'over the socket', filtered: false },
    });
    expect((await expectStatus(200, 'GET', messagesUrl(party.id), member)).json()).toEqual({
      items: [ack.d],
      next_cursor: null,
    });
  });

  it("pages the party's whole history newest first with the before cursor, without gaps or duplicates", async () => {
    const { party, leader, member } = await partyWithMember();
    const bodies = Array.from({ length: 7 }, (_, i) => `message ${i}`);
    for (const [i, body] of bodies.entries()) await sent(i % 2 ? leader : member, party.id, body);
    const first = (await expectStatus(200, 'GET', `${messagesUrl(party.id)}?limit=3`, member)).json();
    expect(first.items.map((m: PartyMessage) => m.body)).toEqual(['message 6', 'message 5', 'message 4']);
    expect(first.items.every((m: PartyMessage) => m.party_id === party.id)).toBe(true);
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(await readAllPages(expectStatus, member, messagesUrl(party.id), 3)).toEqual([...bodies].reverse());
    // A member who joins later reads what was written before they came.
    const [late] = await users(1);
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, late);
    expect(await readAllPages(expectStatus, late, messagesUrl(party.id), 100)).toEqual([...bodies].reverse());
  });

  it('answers an empty page for a party without messages', async () => {
    const { party, member } = await partyWithMember();
    expect((await expectStatus(200, 'GET', messagesUrl(party.id), member)).json()).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it.each([
    ['that is not base64 JSON', 'bm9wZQ'],
    ['holding a key of another shape', cursorOf([1, 2])],
    ['holding an id that cannot be one', cursorOf(['2026-01-01T00:00:00.000000Z', 'not-an-id'])],
  ])('answers 422 naming before for a forged cursor %s', async (_case, before) => {
    const { party, member } = await partyWithMember();
    const bad = await history(member, party.id, `?before=${before}`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'before' }] });
  });

  it.each(['0', '101', 'x'])('refuses a history limit of %s with 422 naming limit', async (limit) => {
    const { party, member } = await partyWithMember();
    const bad = await history(member, party.id, `?limit=${limit}`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [{ path: expect.stringContaining('limit') }],
    });
  });

  it('answers 404 NOT_FOUND to a non-member (a member of another party too) on send, history and chat.sendToParty, as for an unknown party, and stores nothing', async () => {
    const { party, member } = await partyWithMember();
    const elsewhere = await partyWithMember();
    const [outsider] = await users(1);
    await sent(member, party.id, 'members only');
    for (const stranger of [outsider, elsewhere.member]) {
      const write = await send(stranger, party.id, 'let me in');
      expect([write.statusCode, write.json()]).toEqual([404, expect.objectContaining({ code: 'NOT_FOUND' })]);
      const unknown = await send(stranger, UNKNOWN_ID, 'let me in');
      // The same answer as an unknown party: nothing tells a party that exists from one that does not.
      expect(write.json()).toEqual(unknown.json());
      const read = await history(stranger, party.id);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
      expect(read.json()).toEqual((await history(stranger, UNKNOWN_ID)).json());
      const socket = await sockets.open(stranger.access_token);
      expect(await request(socket, 'chat.sendToParty', { party_id: party.id, body: 'psst' })).toMatchObject({
        t: 'error',
        code: 'NOT_FOUND',
      });
      expect(await writtenBy(stranger)).toEqual([]);
    }
    expect((await rowsOf(party.id)).map((m) => m.body)).toEqual(['members only']);
  });

  it.each([
    ['an unknown party', UNKNOWN_ID],
    ['an id that cannot name a party', 'not-a-party'],
  ])(
    'answers 404 NOT_FOUND for the chat of %s (send, history, chat.sendToParty) and stores nothing',
    async (_case, partyId) => {
      const [sender] = await users(1);
      const write = await send(sender, partyId, 'anyone?');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
      const read = await history(sender, partyId);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
      const socket = await sockets.open(sender.access_token);
      expect(await request(socket, 'chat.sendToParty', { party_id: partyId, body: 'hi' })).toMatchObject({
        t: 'error',
        code: 'NOT_FOUND',
      });
      expect(await writtenBy(sender)).toEqual([]);
    },
  );

  it('refuses chat.join of a party: its messages reach the members without one (422, nothing joined)', async () => {
    const { party, member } = await partyWithMember();
    const socket = await sockets.open(member.access_token);
    expect(await request(socket, 'chat.join', { party_id: party.id })).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
    });
  });

  it('masks disallowed words in a party message, sets filtered and stores the masked body', async () => {
    const { party, member } = await partyWithMember();
    expect(await sent(member, party.id, 'what the fuck')).toMatchObject({
      body: 'what the ****',
      filtered: true,
    });
    expect(await rowsOf(party.id)).toEqual([
      { sender_id: member.user.id, body: 'what the ****', filtered: true },
    ]);
  });

  it.each([
    ['only zero-width characters', '\u200B\u200D\uFEFF\u2060'],
    ['only whitespace and bidirectional controls', ' \u202E\t\u2066 '],
  ])(
    'refuses a body of %s with 422 VALIDATION_FAILED (REST and frame) and stores nothing',
    async (_case, body) => {
      const { party, member } = await partyWithMember();
      const refused = await send(member, party.id, body);
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'body.body' }] });
      const socket = await sockets.open(member.access_token);
      expect(await request(socket, 'chat.sendToParty', { party_id: party.id, body })).toMatchObject({
        t: 'error',
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'd.body' }],
      });
      expect(await rowsOf(party.id)).toEqual([]);
    },
  );

  it.each([
    ['a body that is not a string', { body: 42 }],
    ['no body', {}],
    ['an unknown key', { body: 'hi', sender_id: UNKNOWN_ID }],
  ])('refuses a request with %s with 422 VALIDATION_FAILED and stores nothing', async (_case, payload) => {
    const { party, member } = await partyWithMember();
    const refused = await call('POST', messagesUrl(party.id), member, payload);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    expect(await rowsOf(party.id)).toEqual([]);
  });

  it('refuses a body over 2000 characters after trimming with 422 (REST and frame), stores nothing, and takes exactly 2000', async () => {
    const { party, member } = await partyWithMember();
    const body = ` ${'x'.repeat(2001)} `;
    const refused = await send(member, party.id, body);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    const socket = await sockets.open(member.access_token);
    expect(await request(socket, 'chat.sendToParty', { party_id: party.id, body })).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
    });
    expect(await rowsOf(party.id)).toEqual([]);
    expect((await sent(member, party.id, 'x'.repeat(2000))).body).toHaveLength(2000);
  });

  it('checks the body before the membership: an empty body to a party the sender is not in answers 422', async () => {
    const { party } = await partyWithMember();
    const [outsider] = await users(1);
    const refused = await send(outsider, party.id, '  ');
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
  });

  it('answers 404 to a member who left or was kicked, on send and history, keeping what they wrote', async () => {
    const { party, leader, member } = await partyWithMember();
    const [leaver] = await users(1);
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, leaver);
    await sent(member, party.id, 'before the kick');
    await sent(leaver, party.id, 'before leaving');
    await expectStatus(204, 'DELETE', `/api/parties/${party.id}/members/${member.user.id}`, leader);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leaver);
    for (const gone of [member, leaver]) {
      const write = await send(gone, party.id, 'still here?');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
      const read = await history(gone, party.id);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
    }
    expect(await readAllPages(expectStatus, leader, messagesUrl(party.id), 100)).toEqual([
      'before leaving',
      'before the kick',
    ]);
  });

  it("deletes an ended party's messages with it, and its chat then answers 404", async () => {
    const { party, leader, member } = await partyWithMember();
    const other = await partyWithMember();
    await sent(member, party.id, 'one');
    await sent(leader, party.id, 'two');
    await sent(other.member, other.party.id, 'elsewhere');
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, member);
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leader);
    expect(await rowsOf(party.id)).toEqual([]);
    expect((await rowsOf(other.party.id)).map((m) => m.body)).toEqual(['elsewhere']);
    for (const former of [leader, member]) {
      const read = await history(former, party.id);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
      const write = await send(former, party.id, 'hello?');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
    }
  });

  it("keeps a deleted account's party messages, with sender_id null", async () => {
    const { party, leader } = await partyWithMember();
    const [leaving] = await users(1);
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, leaving);
    await sent(leaving, party.id, 'goodbye');
    await expectStatus(204, 'DELETE', '/api/users/me', leaving, { password: PASSWORD });
    const page = (await expectStatus(200, 'GET', messagesUrl(party.id), leader)).json();
    expect(page.items).toMatchObject([{ body: 'goodbye', sender_id: null }]);
  });

  it("lets a member report another member's party message (201), and answers 404 NOT_FOUND to a non-member and a member who left, filing nothing", async () => {
    const { party, leader, member } = await partyWithMember();
    const [outsider, leaver] = await users(2);
    await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, leaver);
    const message = await sent(member, party.id, 'report me');
    expect(await moderation.reported(leader, message.id)).toMatchObject({
      message_id: message.id,
      state: 'open',
    });
    await expectStatus(204, 'POST', `/api/parties/${party.id}/leave`, leaver);
    for (const reporter of [outsider, leaver]) {
      const refused = await moderation.report(reporter, message.id);
      expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
      expect(await moderation.reportRowsBy(reporter)).toEqual([]);
    }
  });

  it("shows the party_id of a reported party message in the moderators' report list", async () => {
    const { party, leader, member } = await partyWithMember();
    const message = await sent(member, party.id, 'reported in a party');
    const report = await moderation.reported(leader, message.id, { reason: 'party spam' });
    const queue = await moderation.queue(await registerWithRole(app(), 'moderator'), '?limit=100');
    expect(queue.statusCode).toBe(200);
    expect(queue.json().items.find((r: { id: string }) => r.id === report.id)).toMatchObject({
      message_id: message.id,
      reporter_id: leader.user.id,
      message: {
        id: message.id,
        sender_id: member.user.id,
        body: 'reported in a party',
        conversation_id: null,
        world_id: null,
        room_id: null,
        group_id: null,
        party_id: party.id,
      },
    });
  });
});

describe('the send rate limit of party chat', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 2, DM_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { users, partyOf, send, sent, rowsOf } = partyChatCalls(app);
  const groups = groupCalls(app);
  const world = worldChatCalls(app);
  const dm = dmCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  it('answers 429 RATE_LIMITED with Retry-After past the limit, counting world, group and party chat together, and stores nothing', async () => {
    const [alice, bob] = await users(2);
    const party = await partyOf(alice, [bob]);
    const group = await groups.createGroup(alice);
    await groups.expectStatus(201, 'POST', `/api/groups/${group.id}/messages`, alice, {
      body: 'in the group',
    });
    await sent(alice, party.id, 'in the party');
    const limited = await send(alice, party.id, 'one too many');
    expect([limited.statusCode, limited.json().code]).toEqual([429, 'RATE_LIMITED']);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const socket = await sockets.open(alice.access_token);
    expect(await request(socket, 'chat.sendToParty', { party_id: party.id, body: 'frame' })).toMatchObject({
      t: 'error',
      code: 'RATE_LIMITED',
      retry_after: expect.any(Number),
    });
    expect((await rowsOf(party.id)).map((m) => m.body)).toEqual(['in the party']);
    // Another member has a limit of their own.
    await sent(bob, party.id, 'bob still may');
  });

  it('counts party sends in the same limit: a sender who used it in their party is refused in world chat', async () => {
    const [alice] = await users(1);
    const party = await partyOf(alice, []);
    const { worldId } = await createWorld(app(), alice.access_token, { visibility: 'public' });
    await sent(alice, party.id, 'one');
    await sent(alice, party.id, 'two');
    const limited = await world.send(alice, { worldId }, 'three');
    expect([limited.statusCode, limited.json().code]).toEqual([429, 'RATE_LIMITED']);
    expect(await world.rowsOf(worldId)).toEqual([]);
  });

  it('counts party sends and direct messages in the same limit, in both orders', async () => {
    const [alice, bob] = await users(2);
    const party = await partyOf(alice, [bob]);
    await sent(alice, party.id, 'in the party');
    await dm.sent(alice, bob, 'a direct message');
    expect((await dm.send(alice, bob.user.id, 'a direct message too many')).statusCode).toBe(429);
    const limited = await send(alice, party.id, 'a party message too many');
    expect([limited.statusCode, limited.json().code]).toEqual([429, 'RATE_LIMITED']);
    expect((await rowsOf(party.id)).map((m) => m.body)).toEqual(['in the party']);
    expect((await dm.rowsOf(alice.user.id)).messages.map((m) => m.body)).toEqual([
      'in the party',
      'a direct message',
    ]);
  });
});

describe('party chat with the text filter in reject mode', () => {
  const app = useTestApp({
    DM_FILTER_MODE: 'reject',
    DM_RATE_LIMIT_COUNT: 1,
    DM_RATE_LIMIT_WINDOW_SECONDS: 60,
  });
  const { users, partyOf, send, sent, rowsOf } = partyChatCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  it('refuses a party message with disallowed words with 422 MESSAGE_REJECTED (REST and frame), stores nothing and does not count it against the limit', async () => {
    const [leader] = await users(1);
    const party = await partyOf(leader, []);
    const refused = await send(leader, party.id, 'what the fuck');
    expect(refused.statusCode).toBe(422);
    expect(refused.json()).toMatchObject({ code: 'MESSAGE_REJECTED', errors: [{ path: 'body' }] });
    const socket = await sockets.open(leader.access_token);
    expect(
      await request(socket, 'chat.sendToParty', { party_id: party.id, body: 'what the fuck' }),
    ).toMatchObject({ t: 'error', code: 'MESSAGE_REJECTED' });
    expect(await rowsOf(party.id)).toEqual([]);
    await sent(leader, party.id, 'what the heck');
  });
});
