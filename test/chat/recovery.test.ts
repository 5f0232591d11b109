import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { type ReceivedFrame, request, TestSocket } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';
import { worldChatCalls } from './world-chat.js';

interface Position {
  offset: number;
  epoch: string;
}

/** Connects and sends an auth frame with `recover`; resolves with the socket and the auth answer. */
async function reconnect(
  wsUrl: string,
  user: TokenResponse,
  recover?: unknown,
): Promise<{ socket: TestSocket; answer: ReceivedFrame }> {
  const socket = await TestSocket.connect(wsUrl);
  const answer = await request(socket, 'auth', {
    token: user.access_token,
    ...(recover === undefined ? {} : { recover }),
  });
  return { socket, answer };
}

/** The events a socket received before `answer` (the auth ack), in arrival order. */
const eventsBefore = (socket: TestSocket, answer: ReceivedFrame) =>
  socket.frames.filter((f) => f.t !== 'ack' && f.t !== 'error' && f !== answer);

const bodies = (frames: ReceivedFrame[]) => frames.map((f) => (f.d as { body: string }).body);

/**
 * Missed-event recovery (docs/recovery.md): a reconnecting socket names the position of the last
 * event it got, and receives every event of the user's stream after it, in order, before the ack.
 */
describe('missed-event recovery', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000, EVENT_HISTORY_SIZE: 60 });
  const { sent, expectStatus } = dmCalls(app);
  const sockets: TestSocket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.close();
  });

  const connect = async (user: TokenResponse, recover?: unknown) => {
    const connected = await reconnect(app().wsUrl, user, recover);
    sockets.push(connected.socket);
    return connected;
  };

  /** Alice connects, receives one DM from Bob (her stream's position), and disconnects. */
  const aliceWentOffline = async (a: () => TestApp) => {
    const [alice, bob] = [await registerUser(a()), await registerUser(a())];
    const { socket } = await connect(alice);
    await sent(bob, alice, 'before');
    const last = await socket.next((f) => f.t === 'dm.message');
    socket.close();
    await socket.closed;
    return { alice, bob, last: last.pos as Position };
  };

  it('every event pushed to a user socket carries its position, and the auth ack the current one', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const { socket, answer } = await connect(alice);
    expect(answer).toMatchObject({ t: 'ack', d: { user_id: alice.user.id, position: { offset: 0 } } });
    expect(answer.d).not.toHaveProperty('recovered');
    const { epoch } = (answer.d as { position: Position }).position;
    await sent(bob, alice, 'one');
    await sent(bob, alice, 'two');
    const first = await socket.next((f) => f.t === 'dm.message');
    const second = await socket.next((f) => f.t === 'dm.message');
    expect([first.pos, second.pos]).toEqual([
      { offset: 1, epoch },
      { offset: 2, epoch },
    ]);
  });

  it('after a disconnect, 50 missed events arrive exactly, in order, before the ack says recovered', async () => {
    const { alice, bob, last } = await aliceWentOffline(app);
    const missed = Array.from({ length: 50 }, (_, i) => `missed ${i + 1}`);
    for (const body of missed) await sent(bob, alice, body);
    const { socket, answer } = await connect(alice, last);
    expect(answer).toMatchObject({
      t: 'ack',
      d: { recovered: true, position: { offset: last.offset + 50 } },
    });
    const replayed = eventsBefore(socket, answer);
    expect(bodies(replayed)).toEqual(missed);
    expect(replayed.map((f) => (f.pos as Position).offset)).toEqual(
      missed.map((_, i) => last.offset + 1 + i),
    );
  });

  it('a client that missed nothing is recovered with no events', async () => {
    const { alice, last } = await aliceWentOffline(app);
    const { socket, answer } = await connect(alice, last);
    expect(answer.d).toMatchObject({ recovered: true, position: last });
    expect(eventsBefore(socket, answer)).toEqual([]);
  });

  it('events sent while the replay runs follow it, none lost or repeated', async () => {
    const { alice, bob, last } = await aliceWentOffline(app);
    for (let i = 1; i <= 20; i++) await sent(bob, alice, `old ${i}`);
    const during = Promise.all(Array.from({ length: 10 }, (_, i) => sent(bob, alice, `new ${i + 1}`)));
    const { socket, answer } = await connect(alice, last);
    await during;
    expect(answer.d).toMatchObject({ recovered: true });
    const messages = () => socket.frames.filter((f) => f.t === 'dm.message');
    await expect.poll(() => messages().length, { timeout: 5000 }).toBeGreaterThanOrEqual(30);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(messages().map((f) => (f.pos as Position).offset)).toEqual(
      Array.from({ length: 30 }, (_, i) => last.offset + 1 + i),
    );
    expect(bodies(messages().slice(0, 20))).toEqual(Array.from({ length: 20 }, (_, i) => `old ${i + 1}`));
  });

  it('does not replay the events a node consumed itself, such as a block ending presence subscriptions', async () => {
    const { alice, bob, last } = await aliceWentOffline(app);
    const carol = await registerUser(app());
    await expectStatus(204, 'PUT', `/api/blocks/${alice.user.id}`, carol);
    await sent(bob, alice, 'after the block');
    const { socket, answer } = await connect(alice, last);
    expect(answer.d).toMatchObject({ recovered: true });
    expect(eventsBefore(socket, answer).map((f) => [f.t, (f.d as { body?: string }).body])).toEqual([
      ['dm.message', 'after the block'],
    ]);
  });

  it('a gap older than the kept history answers recovered false, and the client refetches', async () => {
    const { alice, bob, last } = await aliceWentOffline(app);
    for (let i = 1; i <= 61; i++) await sent(bob, alice, `flood ${i}`);
    const { socket, answer } = await connect(alice, last);
    expect(answer).toMatchObject({
      t: 'ack',
      d: { recovered: false, position: { offset: last.offset + 61 } },
    });
    expect(eventsBefore(socket, answer)).toEqual([]);
  });

  it('a position of another epoch, or ahead of the stream, is not recovered', async () => {
    const { alice, last } = await aliceWentOffline(app);
    for (const recover of [
      { offset: last.offset, epoch: 'another' },
      { offset: last.offset + 5, epoch: last.epoch },
    ]) {
      const { answer } = await connect(alice, recover);
      expect(answer.d).toMatchObject({ recovered: false, position: last });
    }
  });

  it('refuses a malformed recover position with VALIDATION_FAILED naming the field, leaving the socket unauthenticated', async () => {
    const alice = await registerUser(app());
    for (const [recover, path] of [
      [{ offset: -1, epoch: 'e' }, 'd.recover.offset'],
      [{ offset: 1.5, epoch: 'e' }, 'd.recover.offset'],
      [{ offset: 1, epoch: '' }, 'd.recover.epoch'],
      [{ offset: 1, epoch: 'e', extra: true }, 'd.recover'],
      ['0:abc', 'd.recover'],
    ] as const) {
      const { socket, answer } = await connect(alice, recover);
      expect(answer).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
      expect((answer.errors as { path: string }[]).map((e) => e.path)).toContain(path);
      expect(await request(socket, 'presence.heartbeat')).toMatchObject({ code: 'UNAUTHENTICATED' });
    }
  });

  it('a token refresh on the same socket neither replays nor moves the stream', async () => {
    const { alice, bob, last } = await aliceWentOffline(app);
    const { socket } = await connect(alice, last);
    const again = await request(socket, 'auth', {
      token: alice.access_token,
      recover: { offset: 0, epoch: last.epoch },
    });
    expect(again).toMatchObject({ t: 'ack', d: { user_id: alice.user.id } });
    expect(again.d).not.toHaveProperty('position');
    expect(again.d).not.toHaveProperty('recovered');
    await sent(bob, alice, 'after refresh');
    expect((await socket.next((f) => f.t === 'dm.message')).pos).toEqual({
      offset: last.offset + 1,
      epoch: last.epoch,
    });
  });
});

describe('missed-event recovery in joined chats', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000, EVENT_HISTORY_SIZE: 20 });
  const chat = worldChatCalls(app);
  const sockets: TestSocket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.close();
  });

  const join = async (user: TokenResponse, d: Record<string, unknown>) => {
    const { socket } = await reconnect(app().wsUrl, user);
    sockets.push(socket);
    return { socket, answer: await request(socket, 'chat.join', d) };
  };

  /** A public world with a room; a listener joined its room chat, heard one message, and left. */
  const listenerLeft = async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId: roomId } = await createWorld(app(), owner.access_token, {
      visibility: 'public',
    });
    const listener = await registerUser(app());
    const { socket, answer } = await join(listener, { world_id: worldId, room_id: roomId });
    expect(answer.d).toMatchObject({ position: { offset: 0 } });
    expect(answer.d).not.toHaveProperty('recovered');
    await chat.sent(owner, { worldId, roomId }, 'before');
    const heard = await socket.next((f) => f.t === 'chat.message');
    expect(heard.pos).toEqual({
      ...(answer.d as { position: Position }).position,
      offset: 1,
      stream: `chat:${worldId}:${roomId}`,
    });
    socket.close();
    const { stream: _, ...last } = heard.pos as Position & { stream: string };
    return { owner, listener, worldId, roomId, last };
  };

  it('a rejoin with recover gets the messages missed since, in order, before the ack says recovered', async () => {
    const { owner, listener, worldId, roomId, last } = await listenerLeft();
    const missed = ['one', 'two', 'three', 'four', 'five'];
    for (const body of missed) await chat.sent(owner, { worldId, roomId }, body);
    const { socket, answer } = await join(listener, { world_id: worldId, room_id: roomId, recover: last });
    expect(answer.d).toMatchObject({
      world_id: worldId,
      room_id: roomId,
      recovered: true,
      position: { offset: 6 },
    });
    const replayed = eventsBefore(socket, answer);
    expect(bodies(replayed)).toEqual(missed);
    expect(replayed.map((f) => (f.pos as Position).offset)).toEqual([2, 3, 4, 5, 6]);
  });

  it("keeps each chat's positions apart from the user's own stream and from other chats", async () => {
    const { owner, listener, worldId, roomId, last } = await listenerLeft();
    await chat.sent(owner, { worldId }, 'world chat, not the room');
    const { socket, answer } = await join(listener, { world_id: worldId, room_id: roomId, recover: last });
    expect(answer.d).toMatchObject({ recovered: true, position: last });
    expect(eventsBefore(socket, answer)).toEqual([]);
  });

  it('a gap older than the kept history answers recovered false and replays nothing', async () => {
    const { owner, listener, worldId, roomId, last } = await listenerLeft();
    for (let i = 0; i < 21; i++) await chat.sent(owner, { worldId, roomId }, `flood ${i}`);
    const { socket, answer } = await join(listener, { world_id: worldId, room_id: roomId, recover: last });
    expect(answer.d).toMatchObject({ recovered: false, position: { offset: 22 } });
    expect(eventsBefore(socket, answer)).toEqual([]);
  });

  it('joining a chat the socket already joined replays nothing and answers no position', async () => {
    const { listener, worldId, roomId, last } = await listenerLeft();
    const { socket } = await join(listener, { world_id: worldId, room_id: roomId });
    const again = await request(socket, 'chat.join', {
      world_id: worldId,
      room_id: roomId,
      recover: { ...last, offset: 0 },
    });
    expect(again).toMatchObject({ t: 'ack', d: { world_id: worldId, room_id: roomId } });
    expect(again.d).not.toHaveProperty('position');
  });

  it('refuses a malformed recover on chat.join with VALIDATION_FAILED and joins nothing', async () => {
    const { owner, listener, worldId, roomId } = await listenerLeft();
    const { socket, answer } = await join(listener, {
      world_id: worldId,
      room_id: roomId,
      recover: { offset: 'x', epoch: 'e' },
    });
    expect(answer).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'd.recover.offset' }],
    });
    await chat.sent(owner, { worldId, roomId }, 'not for you');
    // A round trip after the send: a message delivered to this socket would have arrived first.
    socket.sendFrame({ t: 'ping', id: 77 });
    await socket.next((f) => f.t === 'pong');
    expect(socket.frames.filter((f) => f.t === 'chat.message')).toEqual([]);
  });
});

describe('missed-event recovery with a short history TTL', () => {
  const app = useTestApp({ EVENT_HISTORY_TTL_SECONDS: 1 });
  const { sent } = dmCalls(app);

  it('events older than EVENT_HISTORY_TTL_SECONDS are not recovered', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const { socket, answer } = await reconnect(app().wsUrl, alice);
    const start = (answer.d as { position: Position }).position;
    socket.close();
    await sent(bob, alice, 'soon stale');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const late = await reconnect(app().wsUrl, alice, start);
    expect(late.answer.d).toMatchObject({ recovered: false, position: { offset: start.offset + 1 } });
    late.socket.close();
  });
});
