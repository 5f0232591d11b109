import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { StreamPosition } from '../../protocol/stream-position.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { hasRedisServer, RedisServer } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { createWorld } from '../helpers/worlds.js';
import { authedSocket, type ReceivedFrame, request, type TestSocket } from '../helpers/ws-client.js';

type Node = TestCluster['nodes'][number];

/**
 * A node whose Redis subscriber connection is gone for a while (docs/recovery.md, "A node cut off
 * from Redis") while another node publishes: its open sockets get what they missed from the
 * recorded histories once it is back, or a `stream.reset` when the history is gone; they are
 * never closed. Node A reaches a private Redis through a proxy the test breaks; node B directly.
 */
describe.skipIf(!hasRedisServer())('a node cut off from Redis pub/sub (needs redis-server on PATH)', () => {
  let redis: RedisServer;
  let proxy: TcpProxy;
  let cluster: TestCluster;
  let a: Node;
  let b: Node;
  let alice: TokenResponse;
  let bob: TokenResponse;
  let worldId: string;
  let socket: TestSocket;
  const calls = callsAs(() => b);

  const sendDm = (body: string) =>
    calls.expectStatus(201, 'POST', `/api/chat/dm/${bob.user.id}/messages`, alice, { body });
  const sendWorldMessage = (body: string) =>
    calls.expectStatus(201, 'POST', `/api/worlds/${worldId}/messages`, alice, { body });
  const bodies = (type: string) =>
    socket.frames.filter((f) => f.t === type).map((f) => (f.d as { body: string }).body);

  beforeAll(async () => {
    redis = await RedisServer.start();
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: redis.port });
    cluster = await buildTestCluster(2, { REDIS_URL: redis.url, DM_RATE_LIMIT_COUNT: 1000 }, (i) =>
      i === 0 ? { REDIS_URL: `redis://127.0.0.1:${proxy.port}` } : {},
    );
    [a, b] = cluster.nodes as [Node, Node];
    alice = await registerUser(b);
    bob = await registerUser(a);
    worldId = (await createWorld(b, alice.access_token, { visibility: 'public' })).worldId;
    // Bob's socket on node A: his own topic, and the world's chat (a recorded topic of its own).
    socket = await authedSocket(a.wsUrl, bob.access_token);
    expect((await request(socket, 'chat.join', { world_id: worldId })).t).toBe('ack');
  });

  afterAll(async () => {
    socket?.close();
    await cluster?.close();
    await proxy?.close();
    await redis?.stop();
  });

  it('delivers the events published while its subscriber was cut off, each once and in order, on the open socket', async () => {
    await sendDm('before');
    await socket.next((f) => f.t === 'dm.message' && (f.d as { body: string }).body === 'before', 5_000);

    await proxy.setMode('refuse');
    const missed = ['gap 1', 'gap 2', 'gap 3', 'gap 4', 'gap 5'];
    for (const body of missed) {
      await sendDm(body);
      await sendWorldMessage(body);
    }
    await proxy.setMode('forward');

    await socket.next((f) => f.t === 'chat.message' && (f.d as { body: string }).body === 'gap 5', 10_000);
    await socket.next((f) => f.t === 'dm.message' && (f.d as { body: string }).body === 'gap 5', 10_000);
    // Live events flow again after the fill, continuing its offsets.
    await sendDm('after');
    await socket.next((f) => f.t === 'dm.message' && (f.d as { body: string }).body === 'after', 10_000);

    const dms = socket.frames.filter((f) => f.t === 'dm.message');
    expect(bodies('dm.message')).toEqual(missed.slice(0, 4));
    // `next` took the last gap event and 'after' out of `frames`; what remains is in order, once.
    const offsets = dms.map((f) => (f.pos as StreamPosition).offset);
    expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(bodies('chat.message')).toEqual(missed.slice(0, 4));
    expect(socket.frames.filter((f) => f.t === 'stream.reset')).toEqual([]);
    expect(socket.open).toBe(true);
    socket.frames.length = 0;
  }, 20_000);

  it('tells the open socket to refetch each recorded topic whose history was lost with Redis', async () => {
    await sendDm('kept');
    const kept = await socket.next(
      (f) => f.t === 'dm.message' && (f.d as { body: string }).body === 'kept',
      5_000,
    );

    // Without persistence a restarted Redis has no history: the epoch changes.
    await redis.stop();
    await redis.start();

    const isReset = (stream?: string) => (f: ReceivedFrame) =>
      f.t === 'stream.reset' && (f.d as { stream?: string }).stream === stream;
    const ownReset = await socket.next(isReset(undefined), 10_000);
    const chatReset = await socket.next(isReset(`chat:${worldId}`), 10_000);
    const position = (ownReset.d as { position: StreamPosition }).position;
    expect(position.epoch).not.toBe((kept.pos as StreamPosition).epoch);
    expect((chatReset.d as { position: StreamPosition }).position).toBeDefined();

    // Node B answers again once its connection is back; the next DM continues the new epoch.
    await vi.waitFor(() => sendDm('new era'), { timeout: 10_000, interval: 100 });
    const live = await socket.next((f) => f.t === 'dm.message', 10_000);
    expect(live).toMatchObject({ d: { body: 'new era' }, pos: { epoch: position.epoch } });
    expect(socket.open).toBe(true);
  }, 20_000);

  it('tells a socket on another node to refetch when an event for it could not be published', async () => {
    // Now node A publishes (Bob's socket there writes to Alice) and Alice's socket is on node B,
    // whose subscription never breaks: only the publish is lost.
    const watcher = await authedSocket(b.wsUrl, alice.access_token);
    const dmToAlice = async (body: string) => {
      const answer = await request(socket, 'dm.send', { user_id: alice.user.id, body });
      expect(answer.t, JSON.stringify(answer)).toBe('ack');
    };
    const isDm = (body: string) => (f: ReceivedFrame) =>
      f.t === 'dm.message' && (f.d as { body: string }).body === body;
    await vi.waitFor(() => dmToAlice('seen'), { timeout: 10_000, interval: 100 });
    const seen = await watcher.next(isDm('seen'), 10_000);

    await proxy.setMode('refuse');
    // Refused (503) until node A's limiters fall back to memory; then stored, its event lost.
    await vi.waitFor(() => dmToAlice('unpublished'), { timeout: 10_000, interval: 100 });
    await proxy.setMode('forward');

    // The reset of the lost publish names where the topic stands now. One without a position may
    // come first, from a fill that could not position the topic: node B's subscriber reconnecting
    // after the Redis restart above (up to 500 ms after its commands) while the watcher joined, for
    // one. A refetch is always safe; what this checks is the one the lost publish causes.
    const reset = await watcher.next(
      (f) => f.t === 'stream.reset' && (f.d as { position?: StreamPosition }).position !== undefined,
      10_000,
    );
    const position = (reset.d as { position: StreamPosition }).position;
    expect(position.epoch).not.toBe((seen.pos as StreamPosition).epoch);
    await vi.waitFor(() => dmToAlice('after'), { timeout: 10_000, interval: 100 });
    const after = await watcher.next(isDm('after'), 10_000);
    expect(after.pos).toMatchObject({ epoch: position.epoch });
    expect(watcher.frames.filter((f) => f.t === 'dm.message')).toEqual([]);
    expect(watcher.open).toBe(true);
    watcher.close();
  }, 30_000);
});
