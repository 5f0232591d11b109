import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { type ReceivedFrame, request, TestSocket } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';

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
