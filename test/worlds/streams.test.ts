import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestApp, type TestCluster, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createRoom, createWorld } from '../helpers/worlds.js';
import {
  authedSocket,
  openedSockets,
  type ReceivedFrame,
  request,
  type TestSocket,
} from '../helpers/ws-client.js';

type Node = Pick<TestApp, 'http'>;

const bytesOf = (id: string, x = 1) => chunkBytes(id, x);

async function worldOf(node: Node, token: string, visibility = 'private') {
  const { worldId, mainRoomId } = await createWorld(node, token, { visibility });
  return { worldId, roomId: mainRoomId };
}

const putOverRest = (
  node: Node,
  token: string,
  at: { worldId: string; roomId: string },
  x: number,
  headers: Record<string, string>,
) =>
  node.http.inject({
    method: 'PUT',
    url: `/api/worlds/${at.worldId}/rooms/${at.roomId}/chunks/${x}/0/0`,
    headers: { ...bearer(token), 'content-type': 'application/octet-stream', ...headers },
    payload: Buffer.from(bytesOf(`o${x}`, x)),
  });

const commits = (socket: TestSocket, n: number, timeoutMs = 4000) =>
  Promise.all(Array.from({ length: n }, () => socket.next((f) => f.t === 'chunks.commit', timeoutMs)));

describe('chunk streams and co-editing on one instance', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  it('acks a subscription with the current content revision, then streams each later commit with its bytes', async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const first = await putOverRest(app(), owner.access_token, at, 1, { 'if-none-match': '*' });
    const socket = await open(owner.access_token);
    const ack = await request(socket, 'chunks.subscribe', { world_id: at.worldId });
    expect(ack).toMatchObject({
      t: 'ack',
      d: { world_id: at.worldId, room_id: null, content_revision: first.json().revision },
    });

    const second = await putOverRest(app(), owner.access_token, at, 2, { 'if-none-match': '*' });
    const [event] = await commits(socket, 1);
    const d = event?.d as {
      content_revision: number;
      author_id: string;
      revisions: { payload: Uint8Array }[];
    };
    expect(d).toMatchObject({
      world_id: at.worldId,
      content_revision: second.json().revision,
      author_id: owner.user.id,
      revisions: [{ room_id: at.roomId, x: 2, y: 0, z: 0, revision: second.json().revision, deleted: false }],
    });
    expect(Buffer.from(d.revisions[0]?.payload as Uint8Array).equals(Buffer.from(bytesOf('o2', 2)))).toBe(
      true,
    );
  });

  it('writes, deletes and batches over the socket with the same preconditions and 409 as REST', async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const socket = await open(owner.access_token);
    const address = { world_id: at.worldId, room_id: at.roomId, x: 5, y: 6, z: 7 };
    const missing = await request(socket, 'chunks.put', { ...address, payload: bytesOf('a') });
    expect(missing).toMatchObject({
      t: 'error',
      code: 'PRECONDITION_REQUIRED',
      // The frame's own terms, where REST names If-Match (test/worlds/content-wording.test.ts).
      message: 'A chunk write needs expected_revision: the revision it replaces, or null to create it.',
    });

    const created = await request(socket, 'chunks.put', {
      ...address,
      payload: bytesOf('a'),
      expected_revision: null,
    });
    expect(created.t).toBe('ack');
    const revision = (created.d as { revision: number }).revision;
    const stale = await request(socket, 'chunks.put', {
      ...address,
      payload: bytesOf('b'),
      expected_revision: null,
    });
    expect(stale).toMatchObject({ t: 'error', code: 'REVISION_CONFLICT', current_revision: revision });

    const read = await app().http.inject({
      method: 'GET',
      url: `/api/worlds/${at.worldId}/rooms/${at.roomId}/chunks/5/6/7`,
      headers: bearer(owner.access_token),
    });
    expect(read.rawPayload.equals(Buffer.from(bytesOf('a')))).toBe(true);

    const deleted = await request(socket, 'chunks.delete', { ...address, expected_revision: revision });
    expect(deleted.t).toBe('ack');
    const batch = await request(socket, 'chunks.batch', {
      world_id: at.worldId,
      writes: [
        { room_id: at.roomId, x: 5, y: 6, z: 7, payload: bytesOf('c'), expected_revision: null },
        { room_id: at.roomId, x: 8, y: 8, z: 8, payload: bytesOf('d'), expected_revision: null },
      ],
    });
    expect(batch).toMatchObject({ t: 'ack', d: { revisions: [expect.any(Number), expect.any(Number)] } });
    const staleBatch = await request(socket, 'chunks.batch', {
      world_id: at.worldId,
      writes: [{ room_id: at.roomId, x: 9, y: 9, z: 9, delete: true, expected_revision: 1 }],
    });
    expect(staleBatch).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
  });

  it('refuses socket writes with a malformed payload, a missing room or a stranger, and writes nothing', async () => {
    const owner = await registerUser(app());
    const stranger = await registerUser(app());
    const at = await worldOf(app(), owner.access_token, 'public');
    const ownerSocket = await open(owner.access_token);
    const strangerSocket = await open(stranger.access_token);
    const address = { world_id: at.worldId, room_id: at.roomId, x: 0, y: 0, z: 0, expected_revision: null };
    const undecodable = await request(ownerSocket, 'chunks.put', {
      ...address,
      payload: Uint8Array.of(1, 2, 3),
    });
    expect(undecodable).toMatchObject({ t: 'error', code: 'INVALID_CHUNK', offset: 0 });
    const notBytes = await request(ownerSocket, 'chunks.put', { ...address, payload: 'AAAA' });
    expect(notBytes).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
    const otherRoom = await request(ownerSocket, 'chunks.put', {
      ...address,
      room_id: '01a1ffb2-0000-7000-8000-000000000000',
      payload: bytesOf('a'),
    });
    expect(otherRoom).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
    const forbidden = await request(strangerSocket, 'chunks.put', { ...address, payload: bytesOf('a') });
    expect(forbidden).toMatchObject({ t: 'error', code: 'FORBIDDEN' });
    const rows = await queryRows(app().db, 'select id from chunk_revisions where world_id = ?', [at.worldId]);
    expect(rows).toEqual([]);
  });

  it('gives one of 20 writers sending the same expected revision over REST and the socket the write, and 19 a conflict', async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const base = (await putOverRest(app(), owner.access_token, at, 0, { 'if-none-match': '*' })).json()
      .revision;
    const sockets = await Promise.all(Array.from({ length: 10 }, () => open(owner.access_token)));
    const overSocket = sockets.map(async (socket, i) => {
      const reply = await request(socket, 'chunks.put', {
        world_id: at.worldId,
        room_id: at.roomId,
        x: 0,
        y: 0,
        z: 0,
        payload: bytesOf(`s${i}`),
        expected_revision: base,
      });
      return reply.t === 'ack' ? 'ok' : (reply.code as string);
    });
    const overRest = Array.from({ length: 10 }, async (_, i) => {
      const reply = await app().http.inject({
        method: 'PUT',
        url: `/api/worlds/${at.worldId}/rooms/${at.roomId}/chunks/0/0/0`,
        headers: {
          ...bearer(owner.access_token),
          'content-type': 'application/octet-stream',
          'if-match': `"${base}"`,
        },
        payload: Buffer.from(bytesOf(`r${i}`)),
      });
      return reply.statusCode === 200 ? 'ok' : (reply.json().code as string);
    });
    const outcomes = await Promise.all([...overSocket, ...overRest]);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'REVISION_CONFLICT')).toHaveLength(19);
    const rows = await queryRows(app().db, 'select id from chunk_revisions where world_id = ?', [at.worldId]);
    expect(rows).toHaveLength(2);
  });

  it('streams only the subscribed room and tells it when the room is deleted', async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const hall = await createRoom(app(), owner.access_token, at.worldId, 'hall');
    const socket = await open(owner.access_token);
    await request(socket, 'chunks.subscribe', { world_id: at.worldId, room_id: hall });
    await putOverRest(app(), owner.access_token, at, 1, { 'if-none-match': '*' });
    await putOverRest(app(), owner.access_token, { worldId: at.worldId, roomId: hall }, 2, {
      'if-none-match': '*',
    });
    const event = await socket.next((f) => f.t === 'chunks.commit');
    expect((event.d as { revisions: { room_id: string }[] }).revisions.map((r) => r.room_id)).toEqual([hall]);

    await app().http.inject({
      method: 'DELETE',
      url: `/api/worlds/${at.worldId}/rooms/${hall}`,
      headers: bearer(owner.access_token),
    });
    const gone = await socket.next((f) => f.t === 'chunks.room_deleted');
    expect(gone.d).toMatchObject({ world_id: at.worldId, room_id: hall });
    expect(socket.frames.filter((f) => f.t === 'chunks.commit')).toEqual([]);
  });

  it('ends a reader stream when the owner makes the world private, and every stream when it is deleted', async () => {
    const owner = await registerUser(app());
    const reader = await registerUser(app());
    const at = await worldOf(app(), owner.access_token, 'public');
    const ownerSocket = await open(owner.access_token);
    const readerSocket = await open(reader.access_token);
    await request(ownerSocket, 'chunks.subscribe', { world_id: at.worldId });
    await request(readerSocket, 'chunks.subscribe', { world_id: at.worldId });
    await app().http.inject({
      method: 'PATCH',
      url: `/api/worlds/${at.worldId}`,
      headers: bearer(owner.access_token),
      payload: { visibility: 'private' },
    });
    expect((await readerSocket.next((f) => f.t === 'chunks.stream_ended')).d).toEqual({
      world_id: at.worldId,
      reason: 'access_revoked',
    });
    await putOverRest(app(), owner.access_token, at, 1, { 'if-none-match': '*' });
    await commits(ownerSocket, 1);
    await app().http.inject({
      method: 'DELETE',
      url: `/api/worlds/${at.worldId}`,
      headers: bearer(owner.access_token),
    });
    expect((await ownerSocket.next((f) => f.t === 'chunks.stream_ended')).d).toMatchObject({
      reason: 'world_deleted',
    });
    expect(readerSocket.frames.filter((f) => f.t === 'chunks.commit')).toEqual([]);
  });

  it('hides a private world from a stranger subscribing (404) and refuses anonymous subscriptions', async () => {
    const owner = await registerUser(app());
    const stranger = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const socket = await open(stranger.access_token);
    expect(await request(socket, 'chunks.subscribe', { world_id: at.worldId })).toMatchObject({
      code: 'NOT_FOUND',
    });
    const anonymous = await open();
    expect(await request(anonymous, 'chunks.subscribe', { world_id: at.worldId })).toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it('tells subscribers to resync from their last revision when a commit never arrives', async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const socket = await open(owner.access_token);
    const ack = await request(socket, 'chunks.subscribe', { world_id: at.worldId });
    const [{ stream_seq }] = (await queryRows(app().db, 'select stream_seq from worlds where id = ?', [
      at.worldId,
    ])) as [{ stream_seq: number }];
    // A commit two places ahead: the one between was lost on its way (its node died after committing).
    await app().bus.publish(`world:${at.worldId}`, {
      t: 'chunks.commit',
      d: { world_id: at.worldId, content_revision: 10 ** 9, author_id: null, revisions: [] },
      seq: Number(stream_seq) + 2,
    });
    const resync = await socket.next((f) => f.t === 'chunks.resync');
    expect(resync.d).toEqual({
      world_id: at.worldId,
      from_revision: (ack.d as { content_revision: number }).content_revision,
      reason: 'missed_commit',
    });
    // Commits flow again past the gap: the first two real ones take the places the stream
    // already went past (the fake one's), the third is delivered.
    let last = 0;
    for (let x = 0; x < 3; x++)
      last = (await putOverRest(app(), owner.access_token, at, x, { 'if-none-match': '*' })).json().revision;
    const next = await socket.next(
      (f) => f.t === 'chunks.commit' && (f.d as { revisions: unknown[] }).revisions.length > 0,
    );
    expect((next.d as { content_revision: number }).content_revision).toBe(last);
  });

  // Falling behind takes more bytes than the kernel's loopback buffers hold: 30 writes of 0.8 MB
  // each, which a loaded two-core machine stores in more than the default 30 s.
  it('tells a subscriber that reads too slowly to resync instead of dropping commits silently', {
    timeout: 120_000,
  }, async () => {
    const owner = await registerUser(app());
    const at = await worldOf(app(), owner.access_token);
    const socket = await open(owner.access_token);
    await request(socket, 'chunks.subscribe', { world_id: at.worldId });
    socket.ws.pause();
    const big = encodeChunk({
      // Large in bytes but few objects: the writes fill the socket's buffers, not the CPU.
      objects: Array.from({ length: 30 }, (_, i) => ({
        id: `o${i}`,
        asset_id: 'asset.crate',
        position: Float32Array.of(i, 0, 0),
        rotation: Float32Array.of(0, 0, 0, 1),
        scale: Float32Array.of(1, 1, 1),
        props: { label: 'x'.repeat(20_000) },
      })),
    });
    const writes = 30;
    for (let x = 0; x < writes; x++) {
      const response = await app().http.inject({
        method: 'PUT',
        url: `/api/worlds/${at.worldId}/rooms/${at.roomId}/chunks/${x}/0/0`,
        headers: {
          ...bearer(owner.access_token),
          'content-type': 'application/octet-stream',
          'if-none-match': '*',
        },
        payload: Buffer.from(big),
      });
      expect(response.statusCode).toBe(200);
    }
    socket.ws.resume();
    const resync = await socket.next((f) => f.t === 'chunks.resync', 10_000);
    expect((resync.d as { reason: string }).reason).toBe('slow_consumer');
    const delivered = socket.frames.filter((f: ReceivedFrame) => f.t === 'chunks.commit');
    expect(delivered.length).toBeLessThan(writes);
    const from = (resync.d as { from_revision: number }).from_revision;
    const last = delivered.at(-1)?.d as { content_revision: number } | undefined;
    expect(from).toBe(last?.content_revision ?? from);
    expect(socket.open).toBe(true);
  });
});

describe('chunk streams across two instances', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2);
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('delivers commits made on instance A to a subscriber on instance B in commit order', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const owner = await registerUser(a);
    const at = await worldOf(a, owner.access_token);
    const subscriber = await authedSocket(b.wsUrl, owner.access_token);
    try {
      await request(subscriber, 'chunks.subscribe', { world_id: at.worldId, room_id: at.roomId });
      const revisions: number[] = [];
      // Writes alternate between the nodes, so their events reach the bus from two publishers.
      for (let x = 0; x < 12; x++) {
        const node = x % 2 === 0 ? a : b;
        const response = await putOverRest(node, owner.access_token, at, x, { 'if-none-match': '*' });
        revisions.push(response.json().revision);
      }
      const events = await commits(subscriber, 12);
      expect(events.map((e) => (e.d as { content_revision: number }).content_revision)).toEqual(revisions);
    } finally {
      subscriber.close();
    }
  });

  it('lets two editors on two instances see each other and conflict cleanly on the same chunk', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const owner = await registerUser(a);
    const at = await worldOf(a, owner.access_token);
    const [editorA, editorB] = await Promise.all([
      authedSocket(a.wsUrl, owner.access_token),
      authedSocket(b.wsUrl, owner.access_token),
    ]);
    try {
      for (const editor of [editorA, editorB])
        await request(editor, 'chunks.subscribe', { world_id: at.worldId, room_id: at.roomId });
      const address = { world_id: at.worldId, room_id: at.roomId, x: 1, y: 1, z: 1 };
      const created = await request(editorA, 'chunks.put', {
        ...address,
        payload: bytesOf('a'),
        expected_revision: null,
      });
      const revision = (created.d as { revision: number }).revision;
      const seen = await editorB.next((f) => f.t === 'chunks.commit');
      expect((seen.d as { content_revision: number }).content_revision).toBe(revision);

      const [fromA, fromB] = await Promise.all([
        request(editorA, 'chunks.put', { ...address, payload: bytesOf('a2'), expected_revision: revision }),
        request(editorB, 'chunks.put', { ...address, payload: bytesOf('b2'), expected_revision: revision }),
      ]);
      const outcomes = [fromA, fromB].map((r) => (r.t === 'ack' ? 'ok' : r.code));
      expect(outcomes.sort()).toEqual(['REVISION_CONFLICT', 'ok']);
      const loser = fromA.t === 'ack' ? fromB : fromA;
      const winner = (fromA.t === 'ack' ? fromA : fromB).d as { revision: number };
      expect(loser.current_revision).toBe(winner.revision);
    } finally {
      editorA.close();
      editorB.close();
    }
  });
});
