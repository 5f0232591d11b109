import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { GroupMessage } from '../../protocol/groups.js';
import { readAllPages } from '../chat/pages.js';
import { worldChatCalls } from '../chat/world-chat.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { moderationCalls } from '../moderation/moderation.js';
import { groupCalls } from './groups.js';

const UNKNOWN_ID = '0190a000-0000-7000-8000-00000000dead';
const messagesUrl = (groupId: string) => `/api/groups/${groupId}/messages`;
const cursorOf = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');

/** The group chat calls of a test file: sends, history and the rows the messages table holds. */
function groupChatCalls(app: () => TestApp) {
  const groups = groupCalls(app);
  const send = (from: TokenResponse, groupId: string, body: string) =>
    groups.call('POST', messagesUrl(groupId), from, { body });
  /** A send that must succeed; answers the message. */
  const sent = async (from: TokenResponse, groupId: string, body: string): Promise<GroupMessage> =>
    (await groups.expectStatus(201, 'POST', messagesUrl(groupId), from, { body })).json();
  const history = (reader: TokenResponse, groupId: string, query = '') =>
    groups.call('GET', `${messagesUrl(groupId)}${query}`, reader);
  /** Every message row of the group, oldest first. */
  const rowsOf = (groupId: string) =>
    queryRows<{ sender_id: string | null; body: string; filtered: boolean }>(
      app().db,
      'select sender_id, body, filtered from messages where group_id = ? order by created_at, id',
      [groupId],
    );
  /** Every message row the user wrote, whatever its chat. */
  const writtenBy = (user: TokenResponse) =>
    queryRows(app().db, 'select body from messages where sender_id = ?', [user.user.id]);
  return { ...groups, send, sent, history, rowsOf, writtenBy };
}

describe('group chat', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000 });
  const { call, expectStatus, createGroup, joined, cast, send, sent, history, rowsOf, writtenBy } =
    groupChatCalls(app);
  const moderation = moderationCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  const user = () => registerUser(app());

  /** An open group of a new owner with one more member. */
  const groupWithMember = async () => {
    const [owner, member] = [await user(), await user()];
    const group = await createGroup(owner);
    await joined(member, group.id);
    return { group, owner, member };
  };

  it("lets a member write a trimmed message (201), stored with the group's id and answered under the canonical id", async () => {
    const { group, owner, member } = await groupWithMember();
    const message = await sent(member, group.id.toUpperCase(), '  hello group  ');
    expect(message).toEqual({
      id: expect.any(String),
      group_id: group.id,
      sender_id: member.user.id,
      body: 'hello group',
      created_at: expect.any(String),
      filtered: false,
    });
    await sent(owner, group.id, 'hello back');
    expect(await rowsOf(group.id)).toEqual([
      { sender_id: member.user.id, body: 'hello group', filtered: false },
      { sender_id: owner.user.id, body: 'hello back', filtered: false },
    ]);
    const stored = await queryRows(
      app().db,
      'select world_id, room_id, conversation_id from messages where id = ?',
      [message.id],
    );
    expect(stored).toEqual([{ world_id: null, room_id: null, conversation_id: null }]);
  });

  it('sends with the chat.sendToGroup frame and acks the stored message', async () => {
    const { group, member } = await groupWithMember();
    const socket = await sockets.open(member.access_token);
    const ack = await request(socket, 'chat.sendToGroup', { group_id: group.id, body: ' over the socket ' });
    expect(ack).toMatchObject({
      t: 'ack',
      d: { group_id: group.id, sender_id: member.user.id, body: 'over the socket', filtered: false },
    });
    const history = (await expectStatus(200, 'GET', messagesUrl(group.id), member)).json();
    expect(history.items).toEqual([ack.d]);
  });

  it('pages the history newest first with the before cursor, without gaps or duplicates', async () => {
    const { group, owner, member } = await groupWithMember();
    const bodies = Array.from({ length: 7 }, (_, i) => `message ${i}`);
    for (const [i, body] of bodies.entries()) await sent(i % 2 ? owner : member, group.id, body);
    const first = (await expectStatus(200, 'GET', `${messagesUrl(group.id)}?limit=3`, member)).json();
    expect(first.items.map((m: GroupMessage) => m.body)).toEqual(['message 6', 'message 5', 'message 4']);
    expect(first.items.every((m: GroupMessage) => m.group_id === group.id)).toBe(true);
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(await readAllPages(expectStatus, member, messagesUrl(group.id), 3)).toEqual([...bodies].reverse());
    expect(await readAllPages(expectStatus, owner, messagesUrl(group.id), 100)).toEqual(
      [...bodies].reverse(),
    );
  });

  it.each([
    ['that is not base64 JSON', 'bm9wZQ'],
    ['holding a key of another shape', cursorOf([1, 2])],
    ['holding an id that cannot be one', cursorOf(['2026-01-01T00:00:00.000000Z', 'not-an-id'])],
    ['holding a day no calendar has', cursorOf(['2026-02-30T00:00:00.000000Z', UNKNOWN_ID])],
  ])('answers 422 naming before for a forged cursor %s', async (_case, before) => {
    const { group, member } = await groupWithMember();
    await sent(member, group.id, 'something to page');
    const bad = await history(member, group.id, `?before=${before}`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'before' }] });
  });

  it.each(['0', '101', 'x'])('refuses a history limit of %s with 422 naming limit', async (limit) => {
    const { group, member } = await groupWithMember();
    const bad = await history(member, group.id, `?limit=${limit}`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [{ path: expect.stringContaining('limit') }],
    });
  });

  it('answers an empty page for a group without messages', async () => {
    const { group, member } = await groupWithMember();
    expect((await expectStatus(200, 'GET', messagesUrl(group.id), member)).json()).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it('refuses a non-member and a pending requester with 403 FORBIDDEN on send, history, chat.join and chat.sendToGroup, and stores nothing', async () => {
    const { group, member, requester, outsider } = await cast();
    await sent(member, group.id, 'members only');
    for (const stranger of [outsider, requester]) {
      const write = await send(stranger, group.id, 'let me in');
      expect([write.statusCode, write.json().code]).toEqual([403, 'FORBIDDEN']);
      const read = await history(stranger, group.id);
      expect([read.statusCode, read.json().code]).toEqual([403, 'FORBIDDEN']);
      const socket = await sockets.open(stranger.access_token);
      expect(await request(socket, 'chat.join', { group_id: group.id })).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
      expect(await request(socket, 'chat.sendToGroup', { group_id: group.id, body: 'psst' })).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
      expect(await writtenBy(stranger)).toEqual([]);
    }
    expect((await rowsOf(group.id)).map((m) => m.body)).toEqual(['members only']);
  });

  it.each([
    ['an unknown group', UNKNOWN_ID],
    ['an id that cannot name a group', 'not-a-group'],
  ])(
    'answers 404 NOT_FOUND for the chat of %s (send, history, chat.join, chat.sendToGroup) and stores nothing',
    async (_case, groupId) => {
      const sender = await user();
      const write = await send(sender, groupId, 'anyone?');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
      const read = await history(sender, groupId);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
      const socket = await sockets.open(sender.access_token);
      expect(await request(socket, 'chat.join', { group_id: groupId })).toMatchObject({
        t: 'error',
        code: 'NOT_FOUND',
      });
      expect(await request(socket, 'chat.sendToGroup', { group_id: groupId, body: 'hi' })).toMatchObject({
        t: 'error',
        code: 'NOT_FOUND',
      });
      expect(await writtenBy(sender)).toEqual([]);
    },
  );

  it('masks disallowed words in a group message, sets filtered and stores the masked body', async () => {
    const { group, member } = await groupWithMember();
    expect(await sent(member, group.id, 'what the fuck')).toMatchObject({
      body: 'what the ****',
      filtered: true,
    });
    expect(await rowsOf(group.id)).toEqual([
      { sender_id: member.user.id, body: 'what the ****', filtered: true },
    ]);
  });

  it.each([
    ['only zero-width characters', '\u200B\u200D\uFEFF\u2060'],
    ['only whitespace and bidirectional controls', ' \u202E\t\u2066 '],
  ])(
    'refuses a body of %s with 422 VALIDATION_FAILED (REST and frame) and stores nothing',
    async (_case, body) => {
      const { group, member } = await groupWithMember();
      const refused = await send(member, group.id, body);
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'body.body' }] });
      const socket = await sockets.open(member.access_token);
      expect(await request(socket, 'chat.sendToGroup', { group_id: group.id, body })).toMatchObject({
        t: 'error',
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'd.body' }],
      });
      expect(await rowsOf(group.id)).toEqual([]);
    },
  );

  it('refuses a body over 2000 characters after trimming with 422 and stores nothing', async () => {
    const { group, member } = await groupWithMember();
    const refused = await send(member, group.id, ` ${'x'.repeat(2001)} `);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    expect(await rowsOf(group.id)).toEqual([]);
    expect((await sent(member, group.id, 'x'.repeat(2000))).body).toHaveLength(2000);
  });

  it('refuses a kicked member and one who left with 403 on send, history and chat.join, keeping what they wrote', async () => {
    const { group, owner, member } = await groupWithMember();
    const leaver = await user();
    await joined(leaver, group.id);
    await sent(member, group.id, 'before the kick');
    await sent(leaver, group.id, 'before leaving');
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${member.user.id}`, owner);
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${leaver.user.id}`, leaver);
    for (const gone of [member, leaver]) {
      const write = await send(gone, group.id, 'still here?');
      expect([write.statusCode, write.json().code]).toEqual([403, 'FORBIDDEN']);
      const read = await history(gone, group.id);
      expect([read.statusCode, read.json().code]).toEqual([403, 'FORBIDDEN']);
      const socket = await sockets.open(gone.access_token);
      expect(await request(socket, 'chat.join', { group_id: group.id })).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
    }
    expect((await rowsOf(group.id)).map((m) => m.body)).toEqual(['before the kick', 'before leaving']);
  });

  it("deletes the group's messages with the group, and its chat then answers 404", async () => {
    const { group, owner, member } = await groupWithMember();
    const other = await groupWithMember();
    await sent(member, group.id, 'one');
    await sent(owner, group.id, 'two');
    await sent(other.member, other.group.id, 'elsewhere');
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}`, owner);
    expect(await rowsOf(group.id)).toEqual([]);
    expect((await rowsOf(other.group.id)).map((m) => m.body)).toEqual(['elsewhere']);
    const read = await history(owner, group.id);
    expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
    const write = await send(member, group.id, 'hello?');
    expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
  });

  it("keeps a deleted account's group messages, with sender_id null", async () => {
    const { group, owner } = await groupWithMember();
    const leaving = await user();
    await joined(leaving, group.id);
    await sent(leaving, group.id, 'goodbye');
    await expectStatus(204, 'DELETE', '/api/users/me', leaving, { password: PASSWORD });
    const page = (await expectStatus(200, 'GET', messagesUrl(group.id), owner)).json();
    expect(page.items).toMatchObject([{ body: 'goodbye', sender_id: null }]);
  });

  it("lets a member report another member's group message (201), and answers 404 NOT_FOUND to a non-member and a kicked member, filing nothing", async () => {
    const { group, owner, member } = await groupWithMember();
    const [outsider, kicked] = [await user(), await user()];
    await joined(kicked, group.id);
    const message = await sent(member, group.id, 'report me');
    expect(await moderation.reported(owner, message.id)).toMatchObject({
      message_id: message.id,
      state: 'open',
    });
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${kicked.user.id}`, owner);
    for (const reporter of [outsider, kicked]) {
      const refused = await moderation.report(reporter, message.id);
      expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
      expect(await moderation.reportRowsBy(reporter)).toEqual([]);
    }
  });

  it("shows the group_id of a reported group message in the moderators' report list", async () => {
    const { group, owner, member } = await groupWithMember();
    const message = await sent(member, group.id, 'reported in a group');
    const report = await moderation.reported(owner, message.id, { reason: 'group spam' });
    const queue = await moderation.queue(await registerWithRole(app(), 'moderator'), '?limit=100');
    expect(queue.statusCode).toBe(200);
    const listed = queue.json().items.find((r: { id: string }) => r.id === report.id);
    expect(listed).toMatchObject({
      id: report.id,
      message_id: message.id,
      reporter_id: owner.user.id,
      reason: 'group spam',
      message: {
        id: message.id,
        sender_id: member.user.id,
        body: 'reported in a group',
        conversation_id: null,
        world_id: null,
        room_id: null,
        group_id: group.id,
      },
    });
  });

  it('checks the body before the membership: an empty body to a group the sender is not in answers 422', async () => {
    const { group } = await groupWithMember();
    const refused = await call('POST', messagesUrl(group.id), await user(), { body: '  ' });
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
  });
});

describe('the send rate limit of group chat', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 2, DM_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { createGroup, joined, send, sent, rowsOf } = groupChatCalls(app);
  const world = worldChatCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  it('answers 429 RATE_LIMITED with Retry-After past the limit, counting world and group chat together, and stores nothing', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(alice);
    await joined(bob, group.id);
    const { worldId } = await createWorld(app(), alice.access_token, { visibility: 'public' });
    await world.sent(alice, { worldId }, 'in the world');
    await sent(alice, group.id, 'in the group');
    const limited = await send(alice, group.id, 'one too many');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const socket = await sockets.open(alice.access_token);
    expect(await request(socket, 'chat.sendToGroup', { group_id: group.id, body: 'frame' })).toMatchObject({
      t: 'error',
      code: 'RATE_LIMITED',
      retry_after: expect.any(Number),
    });
    expect((await world.send(alice, { worldId }, 'world too')).statusCode).toBe(429);
    expect((await rowsOf(group.id)).map((m) => m.body)).toEqual(['in the group']);
    expect((await world.rowsOf(worldId)).map((m) => m.body)).toEqual(['in the world']);
    // Another member has a limit of their own.
    await sent(bob, group.id, 'bob still may');
  });

  it('counts group sends first: a sender who used the limit in a group is refused in world chat', async () => {
    const alice = await registerUser(app());
    const group = await createGroup(alice);
    const { worldId } = await createWorld(app(), alice.access_token, { visibility: 'public' });
    await sent(alice, group.id, 'one');
    await sent(alice, group.id, 'two');
    const limited = await world.send(alice, { worldId }, 'three');
    expect([limited.statusCode, limited.json().code]).toEqual([429, 'RATE_LIMITED']);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(await world.rowsOf(worldId)).toEqual([]);
  });
});

describe('group chat with the text filter in reject mode', () => {
  const app = useTestApp({
    DM_FILTER_MODE: 'reject',
    DM_RATE_LIMIT_COUNT: 1,
    DM_RATE_LIMIT_WINDOW_SECONDS: 60,
  });
  const { createGroup, send, sent, rowsOf } = groupChatCalls(app);

  it('refuses a group message with disallowed words with 422 MESSAGE_REJECTED, stores nothing and does not count it against the limit', async () => {
    const owner = await registerUser(app());
    const group = await createGroup(owner);
    for (let i = 0; i < 2; i++) {
      const refused = await send(owner, group.id, 'what the fuck');
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toMatchObject({ code: 'MESSAGE_REJECTED', errors: [{ path: 'body' }] });
    }
    expect(await rowsOf(group.id)).toEqual([]);
    await sent(owner, group.id, 'what the heck');
  });
});
