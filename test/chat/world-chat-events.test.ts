import { afterEach, describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createRoom, createWorld } from '../helpers/worlds.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';
import { worldChatCalls } from './world-chat.js';

const isMessage = (body: string) => (f: { t: string; d?: unknown }) =>
  f.t === 'chat.message' && (f.d as { body: string }).body === body;

describe('world and room chat over the socket', () => {
  const app = useTestApp();
  const sockets = openedSockets(() => app().wsUrl);
  const { sent, rowsOf } = worldChatCalls(app);
  afterEach(() => sockets.closeAll());

  const world = async (visibility = 'public') => {
    const owner = await registerUser(app());
    return { owner, ...(await createWorld(app(), owner.access_token, { visibility })) };
  };

  it('delivers chat.message to a socket that joined the chat, for a message sent over REST', async () => {
    const { owner, worldId } = await world();
    const listener = await sockets.open((await registerUser(app())).access_token);
    expect(await request(listener, 'chat.join', { world_id: worldId })).toEqual({
      t: 'ack',
      id: expect.any(Number),
      d: { world_id: worldId, room_id: null, position: { offset: 0, epoch: expect.any(String) } },
    });
    const message = await sent(owner, { worldId }, 'over REST');
    expect((await listener.next(isMessage('over REST'))).d).toEqual(message);
  });

  it("keeps the world's chat and a room's apart: each socket hears only the chat it joined", async () => {
    const { owner, worldId, mainRoomId } = await world();
    const [inWorld, inRoom] = [
      await sockets.open(owner.access_token),
      await sockets.open(owner.access_token),
    ];
    await request(inWorld, 'chat.join', { world_id: worldId });
    expect((await request(inRoom, 'chat.join', { world_id: worldId, room_id: mainRoomId })).d).toMatchObject({
      world_id: worldId,
      room_id: mainRoomId,
    });
    await sent(owner, { worldId, roomId: mainRoomId }, 'room 1');
    await sent(owner, { worldId }, 'world');
    await sent(owner, { worldId, roomId: mainRoomId }, 'room 2');
    // Events reach a socket in the order they were published, so a later one bounds the wait.
    await inWorld.next(isMessage('world'));
    await inRoom.next(isMessage('room 1'));
    await inRoom.next(isMessage('room 2'));
    expect(inWorld.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
    expect(inRoom.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
  });

  it('sends with chat.send (world or room), acks the stored message and delivers it to joined sockets', async () => {
    const { owner, worldId, mainRoomId } = await world();
    const [sender, listener] = [
      await sockets.open((await registerUser(app())).access_token),
      await sockets.open(owner.access_token),
    ];
    await request(listener, 'chat.join', { world_id: worldId, room_id: mainRoomId });
    const ack = await request(sender, 'chat.send', { world_id: worldId, room_id: mainRoomId, body: ' hi ' });
    expect(ack.t).toBe('ack');
    expect(ack.d).toMatchObject({ world_id: worldId, room_id: mainRoomId, body: 'hi', filtered: false });
    expect((await listener.next(isMessage('hi'))).d).toEqual(ack.d);
    const toWorld = await request(sender, 'chat.send', { world_id: worldId, body: 'world' });
    expect(toWorld.d).toMatchObject({ world_id: worldId, room_id: null, body: 'world' });
    expect((await rowsOf(worldId)).map((m) => [m.room_id, m.body])).toEqual([
      [mainRoomId, 'hi'],
      [null, 'world'],
    ]);
  });

  it('stops delivering after chat.leave, leaving the other joined chats alone', async () => {
    const { owner, worldId, mainRoomId } = await world();
    const listener = await sockets.open(owner.access_token);
    await request(listener, 'chat.join', { world_id: worldId });
    await request(listener, 'chat.join', { world_id: worldId, room_id: mainRoomId });
    // Any spelling of the ids leaves the chat joined under the canonical one.
    expect(await request(listener, 'chat.leave', { world_id: worldId.toUpperCase() })).toMatchObject({
      t: 'ack',
      d: {},
    });
    await sent(owner, { worldId }, 'unheard');
    await sent(owner, { worldId, roomId: mainRoomId }, 'heard');
    await listener.next(isMessage('heard'));
    expect(listener.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
  });

  it('stops delivering to a joined non-owner once the world turns private, while the owner still hears it', async () => {
    const { owner, worldId } = await world();
    const guest = await sockets.open((await registerUser(app())).access_token);
    const ownerSocket = await sockets.open(owner.access_token);
    for (const socket of [guest, ownerSocket]) await request(socket, 'chat.join', { world_id: worldId });
    const made = await app().http.inject({
      method: 'PATCH',
      url: `/api/worlds/${worldId}`,
      headers: { authorization: `Bearer ${owner.access_token}` },
      payload: { visibility: 'private' },
    });
    expect(made.statusCode).toBe(200);
    await sent(owner, { worldId }, 'owners only');
    await ownerSocket.next(isMessage('owners only'));
    await sent(owner, { worldId }, 'marker');
    await ownerSocket.next(isMessage('marker'));
    expect(guest.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
  });

  it.each([
    ['a private world of another user', async () => ({ world_id: (await world('private')).worldId })],
    ['an unknown world', async () => ({ world_id: '0190a000-0000-7000-8000-00000000dead' })],
    ['an id that cannot name a world', async () => ({ world_id: 'nope' })],
    [
      'a room of another world',
      async () => ({ world_id: (await world()).worldId, room_id: (await world()).mainRoomId }),
    ],
  ])('refuses chat.join and chat.send for %s with NOT_FOUND, and writes nothing', async (_case, target) => {
    const stranger = await registerUser(app());
    const socket = await sockets.open(stranger.access_token);
    const chat = await target();
    expect(await request(socket, 'chat.join', chat)).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
    expect(await request(socket, 'chat.send', { ...chat, body: 'hello?' })).toMatchObject({
      t: 'error',
      code: 'NOT_FOUND',
    });
    expect(socket.frames).toEqual([]);
    expect(
      await queryRows(app().db, 'select 1 from messages where sender_id = ?', [stranger.user.id]),
    ).toEqual([]);
  });

  it('refuses a chat.send with a blank body or one holding U+0000 with VALIDATION_FAILED, and writes nothing', async () => {
    const { owner, worldId } = await world();
    const socket = await sockets.open(owner.access_token);
    expect(await request(socket, 'chat.send', { world_id: worldId, body: '   ' })).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'd.body' }],
    });
    expect(await request(socket, 'chat.send', { world_id: worldId, body: 'a\u0000b' })).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'd.body' }],
    });
    expect(await rowsOf(worldId)).toEqual([]);
  });
});

describe('chat joins under the gateway subscription limit', () => {
  const app = useTestApp({ WS_MAX_SUBSCRIPTIONS: 1 });
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  it('refuses a join over WS_MAX_SUBSCRIPTIONS with SUBSCRIPTION_LIMIT, and accepts it once another chat was left', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const hall = await createRoom(app(), owner.access_token, worldId, 'hall');
    const socket: TestSocket = await sockets.open(owner.access_token);
    expect((await request(socket, 'chat.join', { world_id: worldId })).t).toBe('ack');
    // Joining a chat twice holds one subscription.
    expect((await request(socket, 'chat.join', { world_id: worldId })).t).toBe('ack');
    expect(await request(socket, 'chat.join', { world_id: worldId, room_id: hall })).toMatchObject({
      t: 'error',
      code: 'SUBSCRIPTION_LIMIT',
    });
    await request(socket, 'chat.leave', { world_id: worldId });
    expect((await request(socket, 'chat.join', { world_id: worldId, room_id: hall })).t).toBe('ack');
  });
});
