import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamPosition } from '../../protocol/stream-position.js';
import { getMe, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { RedisSentinelServers } from '../helpers/redis-topologies.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
import { authedSocket, type ReceivedFrame, request, TestSocket } from '../helpers/ws-client.js';

/**
 * The Redis primary killed (SIGKILL) under a steady load of direct messages and chunk writes over
 * sockets, on two nodes that reach Redis through three Sentinels (docs/scaling.md, "Redis primary
 * failover"). Nothing here waits for a fixed time: the load runs until the Sentinels promoted the
 * replica and the service answers again, within a generous deadline.
 */
describe.skipIf(!hasRedisServer())('a Redis primary failover under load (Sentinel)', () => {
  let servers: RedisSentinelServers;
  let cluster: TestCluster;

  beforeAll(async () => {
    servers = await RedisSentinelServers.start();
    // Refusals answer at once while Redis is down, so the load loop runs fast: no rate limit may trip.
    cluster = await buildTestCluster(2, {
      ...servers.settings,
      DM_RATE_LIMIT_COUNT: 100_000,
      WS_MAX_FRAMES_PER_SECOND: 100_000,
    });
  });
  afterAll(async () => {
    await cluster?.close();
    await servers?.stop();
  });

  it('answers 503 meanwhile, recovers by itself, keeps sockets open and loses no acknowledged write or event', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const alice = await registerUser(a);
    const bob = await registerUser(b);
    const world = await createWorld(a, alice.access_token);
    // One socket per kind of request: TestSocket.next is not meant for concurrent waiters.
    const sender = await authedSocket(a.wsUrl, alice.access_token);
    const writer = await authedSocket(a.wsUrl, alice.access_token);
    const recipient = await authedSocket(b.wsUrl, bob.access_token);
    const watcher = await authedSocket(b.wsUrl, alice.access_token);
    await request(watcher, 'chunks.subscribe', { world_id: world.worldId });

    const sentIds: string[] = [];
    const revisions: number[] = [];
    const refusals: string[] = [];
    let x = 0;
    /** One round of load: a DM and a chunk write over the socket, an authenticated REST call. */
    const round = async (): Promise<boolean> => {
      const [dm, chunk, me] = await Promise.all([
        answer(sender, 'dm.send', { user_id: bob.user.id, body: `m${sentIds.length}` }),
        answer(writer, 'chunks.put', {
          world_id: world.worldId,
          room_id: world.mainRoomId,
          ...{ x: ++x, y: 0, z: 0 },
          payload: chunkBytes(`c${x}`, x),
          expected_revision: null,
        }),
        getMe(b, bob.access_token),
      ]);
      if (dm.t === 'ack') sentIds.push((dm.d as { id: string }).id);
      else refusals.push(String(dm.code));
      if (chunk.t === 'ack') revisions.push((chunk.d as { revision: number }).revision);
      else refusals.push(String(chunk.code));
      if (me.statusCode !== 200) refusals.push(`HTTP ${me.statusCode} ${me.json().code}`);
      return dm.t === 'ack' && chunk.t === 'ack' && me.statusCode === 200;
    };

    for (let i = 0; i < 5; i++) expect(await round()).toBe(true);
    await servers.primary.stop();
    let promoted = false;
    const promotion = servers.promoted().then(() => {
      promoted = true;
    });
    // Until the promoted replica answered several rounds in a row (or the deadline fails the test).
    const deadline = Date.now() + 60_000;
    let healthyRounds = 0;
    while (!(promoted && healthyRounds >= 5)) {
      if (Date.now() > deadline) throw new Error(`no recovery within 60 s; refusals: ${refusals.join(', ')}`);
      healthyRounds = (await round()) ? healthyRounds + 1 : 0;
    }
    await promotion;

    // Every refusal was a 503 SERVICE_UNAVAILABLE (never a 500, never a hang: answer() gives up),
    // and there were some: the primary was gone for a while.
    expect(refusals.length).toBeGreaterThan(0);
    expect(new Set(refusals.map((refusal) => refusal.replace('HTTP 503 ', '')))).toEqual(
      new Set(['SERVICE_UNAVAILABLE']),
    );
    for (const socket of [sender, writer, recipient, watcher]) expect(socket.open).toBe(true);

    // Every acknowledged write is in the database.
    const stored = await queryRows<{ id: string }>(a.db, 'select id from messages where sender_id = ?', [
      alice.user.id,
    ]);
    expect(stored.map((row) => row.id)).toEqual(expect.arrayContaining(sentIds));
    const storedRevisions = await queryRows<{ id: string }>(
      a.db,
      'select id from chunk_revisions where world_id = ?',
      [world.worldId],
    );
    expect(storedRevisions.map((row) => Number(row.id))).toEqual(expect.arrayContaining(revisions));

    // Events flow live again. The last round's arrived live, or, when its publish was lost (the
    // sender's node may still be reconnecting), the recipient was told to refetch after the last
    // one it got. An earlier one that did not arrive is never dropped silently either: a client
    // that reconnects from the last event it got before it has it replayed or is told
    // `recovered: false` to refetch (docs/recovery.md).
    await vi.waitFor(
      async () => {
        const answered = await answer(sender, 'dm.send', { user_id: bob.user.id, body: 'settled' });
        expect(answered.t).toBe('ack');
        const id = (answered.d as { id: string }).id;
        await recipient.next((f) => f.t === 'dm.message' && (f.d as { id: string }).id === id, 2_000);
      },
      { timeout: 20_000, interval: 100 },
    );
    const lastId = sentIds.at(-1);
    const toldOrLive = (frames: ReceivedFrame[]) =>
      frames.some((f) => f.t === 'dm.message' && (f.d as { id: string }).id === lastId) ||
      frames.findLastIndex((f) => f.t === 'stream.reset') > frames.findLastIndex((f) => f.t === 'dm.message');
    // On failure, what the recipient got: each frame's type, body and position.
    const got = () =>
      JSON.stringify(recipient.frames.map((f) => [f.t, (f.d as { body?: string }).body, f.pos]));
    await vi.waitFor(() => expect(toldOrLive(recipient.frames), got()).toBe(true), { timeout: 10_000 });
    const live = new Set(received(recipient, 'dm.message').map((frame) => (frame.d as { id: string }).id));
    const firstMissed = sentIds.findIndex((id) => id !== lastId && !live.has(id));
    if (firstMissed >= 0) {
      const before = received(recipient, 'dm.message').findLast((frame) =>
        sentIds.slice(0, firstMissed).includes((frame.d as { id: string }).id),
      );
      const again = await TestSocket.connect(a.wsUrl);
      again.sendFrame({
        t: 'auth',
        id: 0,
        d: { token: bob.access_token, recover: before?.pos as StreamPosition },
      });
      const ack = await again.next((f) => f.id === 0, 5_000);
      const replayed = new Set(received(again, 'dm.message').map((frame) => (frame.d as { id: string }).id));
      again.close();
      if ((ack.d as { recovered: boolean }).recovered) {
        expect(sentIds.filter((id) => id !== lastId && !live.has(id) && !replayed.has(id))).toEqual([]);
      }
    }

    // Chunk streams resynchronise by revision: the watcher saw each acknowledged revision, or its
    // next subscription acknowledges a content revision past them all.
    const commits = received(watcher, 'chunks.commit').flatMap((frame) =>
      (frame.d as { revisions: { revision: number }[] }).revisions.map((r) => r.revision),
    );
    const unseen = revisions.filter((revision) => !commits.includes(revision));
    if (unseen.length > 0) {
      const resubscriber = await authedSocket(b.wsUrl, alice.access_token);
      const resubscribed = await request(resubscriber, 'chunks.subscribe', { world_id: world.worldId });
      resubscriber.close();
      expect((resubscribed.d as { content_revision: number }).content_revision).toBeGreaterThanOrEqual(
        Math.max(...revisions),
      );
    }
    for (const socket of [sender, writer, recipient, watcher]) socket.close();
  });
});

let nextId = 1;

/** Sends a request frame and resolves with its ack or error frame; a loaded machine may take seconds. */
async function answer(socket: TestSocket, t: string, d: unknown): Promise<ReceivedFrame> {
  const id = nextId++;
  socket.sendFrame({ t, id, d });
  return socket.next((f) => f.id === id && (f.t === 'ack' || f.t === 'error'), 10_000);
}

/** The frames of type `t` the socket received and nothing consumed yet, in order. */
function received(socket: TestSocket, t: string): ReceivedFrame[] {
  return socket.frames.filter((frame) => frame.t === t);
}
