import { describe, expect, it } from 'vitest';
import { PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createRoom, createWorld } from '../helpers/worlds.js';
import { type Chat, messagesUrl, worldChatCalls } from './world-chat.js';

const UNKNOWN_ID = '0190a000-0000-7000-8000-00000000dead';

describe('world and room chat', () => {
  const app = useTestApp();
  const { call, expectStatus, send, sent, rowsOf, allPages } = worldChatCalls(app);
  const user = () => registerUser(app());
  /** A world of a new owner, with its main room. */
  const world = async (visibility = 'public') => {
    const owner = await user();
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token, { visibility });
    return { owner, worldId, mainRoomId };
  };

  it("writes a trimmed message to the world's chat (201) with room_id null, and to a room's with its room_id", async () => {
    const { owner, worldId, mainRoomId } = await world();
    const visitor = await user();
    const inWorld = await sent(visitor, { worldId }, '  hello world  ');
    expect(inWorld).toEqual({
      id: expect.any(String),
      world_id: worldId,
      room_id: null,
      sender_id: visitor.user.id,
      body: 'hello world',
      created_at: expect.any(String),
      filtered: false,
    });
    const inRoom = await sent(owner, { worldId, roomId: mainRoomId }, 'hello room');
    expect(inRoom).toMatchObject({ world_id: worldId, room_id: mainRoomId, sender_id: owner.user.id });
    expect(await rowsOf(worldId)).toEqual([
      { room_id: null, sender_id: visitor.user.id, body: 'hello world', filtered: false },
      { room_id: mainRoomId, sender_id: owner.user.id, body: 'hello room', filtered: false },
    ]);
  });

  it('lets anyone signed in write to and read an unlisted world, and answers ids in their canonical spelling', async () => {
    const { worldId, mainRoomId } = await world('unlisted');
    const visitor = await user();
    const chat = { worldId: worldId.toUpperCase(), roomId: mainRoomId.toUpperCase() };
    expect(await sent(visitor, chat, 'hi')).toMatchObject({ world_id: worldId, room_id: mainRoomId });
    const history = (await expectStatus(200, 'GET', messagesUrl(chat), visitor)).json();
    expect(history.items.map((m: { body: string }) => m.body)).toEqual(['hi']);
  });

  it('masks disallowed words, sets filtered and stores the masked body', async () => {
    const { worldId } = await world();
    const message = await sent(await user(), { worldId }, 'what the fuck');
    expect(message).toMatchObject({ body: 'what the ****', filtered: true });
    expect((await rowsOf(worldId)).map(({ body, filtered }) => ({ body, filtered }))).toEqual([
      { body: 'what the ****', filtered: true },
    ]);
  });

  it.each([
    ['over 2000 characters after trimming', ` ${'x'.repeat(2001)} `, 'body'],
    // The rules of the request schema, which names the field by where it came from.
    ['that shows nothing', ' \n\t ', 'body.body'],
    ['holding U+0000', 'a\u0000b', 'body.body'],
    ['holding a lone surrogate', 'a\uD800b', 'body.body'],
  ])('refuses a body %s with 422 VALIDATION_FAILED and writes nothing', async (_case, body, path) => {
    const { worldId, mainRoomId } = await world();
    const sender = await user();
    for (const chat of [{ worldId }, { worldId, roomId: mainRoomId }]) {
      const response = await send(sender, chat, body);
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [expect.objectContaining({ path })],
      });
    }
    expect(await rowsOf(worldId)).toEqual([]);
  });

  it('checks the body before the world: an empty body to an unknown world answers 422', async () => {
    const response = await send(await user(), { worldId: UNKNOWN_ID }, '  ');
    expect([response.statusCode, response.json().code]).toEqual([422, 'VALIDATION_FAILED']);
  });

  it("answers 404 NOT_FOUND to a non-owner for a private world's chat (send and history), and writes nothing", async () => {
    const { owner, worldId, mainRoomId } = await world('private');
    const stranger = await user();
    for (const chat of [{ worldId }, { worldId, roomId: mainRoomId }]) {
      const write = await send(stranger, chat, 'let me in');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
      const read = await call('GET', messagesUrl(chat), stranger);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
    }
    expect(await rowsOf(worldId)).toEqual([]);
    await sent(owner, { worldId }, 'the owner may');
  });

  it.each<[string, (ids: { worldId: string; otherRoomId: string }) => Chat]>([
    ['an unknown world', () => ({ worldId: UNKNOWN_ID })],
    ['an id that cannot name a world', () => ({ worldId: 'not-a-world' })],
    ['an unknown room', ({ worldId }) => ({ worldId, roomId: UNKNOWN_ID })],
    ['an id that cannot name a room', ({ worldId }) => ({ worldId, roomId: 'not-a-room' })],
    ['a room of another world', ({ worldId, otherRoomId }) => ({ worldId, roomId: otherRoomId })],
  ])(
    'answers 404 NOT_FOUND for the chat of %s (send and history), and writes nothing',
    async (_case, target) => {
      const { worldId } = await world();
      const other = await world();
      const chat = target({ worldId, otherRoomId: other.mainRoomId });
      const sender = await user();
      const write = await send(sender, chat, 'anyone?');
      expect([write.statusCode, write.json().code]).toEqual([404, 'NOT_FOUND']);
      const read = await call('GET', messagesUrl(chat), sender);
      expect([read.statusCode, read.json().code]).toEqual([404, 'NOT_FOUND']);
      const written = await queryRows(app().db, 'select 1 from messages where sender_id = ?', [
        sender.user.id,
      ]);
      expect(written).toEqual([]);
    },
  );

  it("keeps the world's chat and each room's apart in the history", async () => {
    const { owner, worldId, mainRoomId } = await world();
    const hall = await createRoom(app(), owner.access_token, worldId, 'hall');
    await sent(owner, { worldId }, 'world');
    await sent(owner, { worldId, roomId: mainRoomId }, 'main');
    await sent(owner, { worldId, roomId: hall }, 'hall');
    expect(await allPages(owner, { worldId }, 10)).toEqual(['world']);
    expect(await allPages(owner, { worldId, roomId: mainRoomId }, 10)).toEqual(['main']);
    expect(await allPages(owner, { worldId, roomId: hall }, 10)).toEqual(['hall']);
  });

  it.each([
    ["the world's chat", false],
    ["a room's chat", true],
  ])(
    'pages %s newest first without gaps or duplicates while other messages are sent meanwhile',
    async (_case, inRoom) => {
      const { owner, worldId, mainRoomId } = await world();
      const chat = inRoom ? { worldId, roomId: mainRoomId } : { worldId };
      const writers = [owner, await user()];
      const before = Array.from({ length: 10 }, (_, i) => `before ${i}`);
      for (const [i, body] of before.entries()) await sent(writers[i % 2] as typeof owner, chat, body);
      const meanwhile: Promise<unknown>[] = [];
      const pages = await allPages(owner, chat, 3, () => {
        for (const writer of writers) meanwhile.push(sent(writer, chat, `meanwhile ${meanwhile.length}`));
      });
      await Promise.all(meanwhile);
      // Everything sent meanwhile is newer than the first page, so no later page shifts.
      expect(pages).toEqual([...before].reverse());
      expect(meanwhile.length).toBeGreaterThan(0);
      expect(await rowsOf(worldId)).toHaveLength(before.length + meanwhile.length);
    },
  );

  it('answers an empty page for a chat without messages and 422 naming before for a foreign cursor', async () => {
    const { owner, worldId } = await world();
    expect((await expectStatus(200, 'GET', messagesUrl({ worldId }), owner)).json()).toEqual({
      items: [],
      next_cursor: null,
    });
    const bad = await call('GET', `${messagesUrl({ worldId })}?before=bm9wZQ`, owner);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'before' }] });
  });

  it("deletes the world's messages with the world, and a room's with the room", async () => {
    const { owner, worldId, mainRoomId } = await world();
    const hall = await createRoom(app(), owner.access_token, worldId, 'hall');
    await sent(owner, { worldId }, 'world');
    await sent(owner, { worldId, roomId: mainRoomId }, 'main');
    await sent(owner, { worldId, roomId: hall }, 'hall');
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}/rooms/${hall}`, owner);
    expect((await rowsOf(worldId)).map((m) => m.body)).toEqual(['world', 'main']);
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    expect(await rowsOf(worldId)).toEqual([]);
  });

  it("keeps a deleted account's messages, with sender_id null", async () => {
    const { owner, worldId } = await world();
    const leaving = await user();
    await sent(leaving, { worldId }, 'goodbye');
    await expectStatus(204, 'DELETE', '/api/users/me', leaving, { password: PASSWORD });
    expect(await rowsOf(worldId)).toEqual([
      { room_id: null, sender_id: null, body: 'goodbye', filtered: false },
    ]);
    const history = (await expectStatus(200, 'GET', messagesUrl({ worldId }), owner)).json();
    expect(history.items).toMatchObject([{ body: 'goodbye', sender_id: null }]);
  });
});
