import { decode } from '@msgpack/msgpack';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import type { EventFrame } from '../../protocol/frames.js';
import type { ChunksPage, RoomChunk } from '../../protocol/room-content.js';
import type { Connection } from '../../src/platform/gateway/connection.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, type TestSocket } from '../helpers/ws-client.js';

type Key = [x: number, y: number, z: number];
interface Document {
  content_revision: number;
  count: number;
  chunks: RoomChunk[];
}

/** Codec bytes of a one-object chunk; `padding` characters of props make it as large as a test needs. */
const bytes = (id: string, padding = 0) =>
  Buffer.from(
    encodeChunk({
      objects: [
        {
          id,
          asset_id: 'asset.rock',
          position: Float32Array.of(1, 2, 3),
          rotation: Float32Array.of(0, 0, 0, 1),
          scale: Float32Array.of(1, 1, 1),
          props: { padding: 'p'.repeat(padding) },
        },
      ],
    }),
  );
/** About 300 KiB: two fit in a page's byte budget, the third starts the next page. */
const LARGE = 300 * 1024;

describe('loading a room', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  const inject = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, token?: string, more = {}) =>
    app().http.inject({ method, url, headers: token ? bearer(token) : {}, ...more });

  async function newWorld(visibility = 'private') {
    const owner = await registerUser(app());
    const created = await inject('POST', '/api/worlds', owner.access_token, {
      payload: { name: 'Quarry', visibility },
    });
    const world = created.json() as { id: string; rooms: { id: string }[] };
    return { token: owner.access_token, worldId: world.id, roomId: world.rooms[0]?.id as string };
  }

  async function addRoom(token: string, worldId: string, name: string): Promise<string> {
    const created = await inject('POST', `/api/worlds/${worldId}/rooms`, token, { payload: { name } });
    return (created.json() as { id: string }).id;
  }

  const chunkUrl = (worldId: string, roomId: string, [x, y, z]: Key) =>
    `/api/worlds/${worldId}/rooms/${roomId}/chunks/${x}/${y}/${z}`;

  /** Writes through the REST PUT: creates with no `revision`, replaces the given one otherwise. */
  async function put(
    token: string,
    worldId: string,
    roomId: string,
    key: Key,
    body: Buffer,
    revision?: number,
  ) {
    const response = await inject('PUT', chunkUrl(worldId, roomId, key), token, {
      headers: {
        ...bearer(token),
        'content-type': 'application/octet-stream',
        ...(revision === undefined ? { 'if-none-match': '*' } : { 'if-match': `"${revision}"` }),
      },
      payload: body,
    });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { revision: number }).revision;
  }

  async function remove(token: string, worldId: string, roomId: string, key: Key, revision: number) {
    const response = await inject('DELETE', chunkUrl(worldId, roomId, key), token, {
      headers: { ...bearer(token), 'if-match': `"${revision}"` },
    });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { revision: number }).revision;
  }

  const getContent = (token: string | undefined, worldId: string, roomId: string) =>
    inject('GET', `/api/worlds/${worldId}/rooms/${roomId}/content`, token);

  async function content(token: string, worldId: string, roomId: string): Promise<Document> {
    const response = await getContent(token, worldId, roomId);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toBe('application/msgpack');
    return decode(response.rawPayload) as Document;
  }

  let nextRequestId = 1;
  /** Sends chunks.load and returns its answer with the pages that came before it. */
  async function loadOverSocket(socket: TestSocket, worldId: string, roomId: string) {
    const requestId = nextRequestId++;
    socket.sendFrame({ t: 'chunks.load', id: requestId, d: { world_id: worldId, room_id: roomId } });
    const reply = await socket.next((f) => f.id === requestId && (f.t === 'ack' || f.t === 'error'));
    // Frames are kept in arrival order: what is here when the answer is read arrived before it.
    const pages = socket.frames
      .filter((f) => f.t === 'chunks.page')
      .map((f) => (f as unknown as EventFrame<'chunks.page'>).d);
    socket.frames.splice(0);
    expect(pages.every((page) => page.request_id === requestId)).toBe(true);
    return { reply, pages };
  }

  /**
   * Calls the chunks.load handler with a stand-in connection that records the pages and runs
   * `betweenPages` while the handler waits for the first page to drain, so a test can change the
   * room at a known point of the load.
   */
  async function loadWithPause(
    token: string,
    worldId: string,
    roomId: string,
    betweenPages: () => Promise<void>,
  ) {
    const pages: ChunksPage[] = [];
    let paused = false;
    const connection = {
      closed: false,
      sendPaced(frame: Uint8Array) {
        pages.push((decode(frame) as EventFrame<'chunks.page'>).d);
        return 'sent';
      },
      async drained() {
        if (paused) return;
        paused = true;
        await betweenPages();
      },
    } as unknown as Connection;
    const user = await app().tokens.verify(token);
    const ctx = app().ctx({ user, log: app().log, ip: '127.0.0.1' });
    const handler = app().operations.get('chunks.load')?.handler;
    const result = handler?.(ctx, { world_id: worldId, room_id: roomId }, connection, 9);
    return { result: Promise.resolve(result), pages };
  }

  it('answers every live chunk of the room as one msgpack map, bytes for bytes, with revisions and the count', async () => {
    const { token, worldId, roomId } = await newWorld();
    const first = await put(token, worldId, roomId, [2, 0, 0], bytes('first'));
    const rewritten = await put(token, worldId, roomId, [2, 0, 0], bytes('rewritten'), first);
    const deleted = await put(token, worldId, roomId, [0, 0, 0], bytes('deleted'));
    await remove(token, worldId, roomId, [0, 0, 0], deleted);
    const negative = await put(token, worldId, roomId, [-5, 7, -1], bytes('negative'));
    const otherRoom = await addRoom(token, worldId, 'cellar');
    await put(token, worldId, otherRoom, [1, 1, 1], bytes('elsewhere'));
    const world = (await inject('GET', `/api/worlds/${worldId}`, token)).json() as {
      content_revision: number;
    };

    const document = await content(token, worldId, roomId);
    expect(Object.keys(document)).toEqual(['content_revision', 'count', 'chunks']);
    expect(document).toMatchObject({ content_revision: world.content_revision, count: 2 });
    expect(document.chunks.map(({ x, y, z, revision }) => ({ x, y, z, revision }))).toEqual([
      { x: -5, y: 7, z: -1, revision: negative },
      { x: 2, y: 0, z: 0, revision: rewritten },
    ]);
    expect(document.chunks[0]?.payload).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(document.chunks[0]?.payload as Uint8Array).equals(bytes('negative'))).toBe(true);
    expect(Buffer.from(document.chunks[1]?.payload as Uint8Array).equals(bytes('rewritten'))).toBe(true);
  });

  it('answers an empty room with count 0 and no chunks, over REST and the socket', async () => {
    const { token, worldId, roomId } = await newWorld();
    expect(await content(token, worldId, roomId)).toEqual({ content_revision: 0, count: 0, chunks: [] });
    const socket = await open(token);
    const { reply, pages } = await loadOverSocket(socket, worldId, roomId);
    expect(reply).toMatchObject({ t: 'ack', d: { content_revision: 0, count: 0 } });
    expect(pages).toEqual([]);
  });

  it('reads a room of 600 chunks in several pages, answering one map in (x, y, z) order and the same chunks over the socket', async () => {
    const { token, worldId, roomId } = await newWorld();
    const keys: Key[] = Array.from({ length: 600 }, (_, i) => [(i * 7) % 13, (i % 5) - 2, i]);
    for (let i = 0; i < keys.length; i += 25) {
      await Promise.all(
        keys.slice(i, i + 25).map((key) => put(token, worldId, roomId, key, bytes(`c${key.join('.')}`))),
      );
    }

    const document = await content(token, worldId, roomId);
    expect(document.count).toBe(600);
    expect(document.chunks).toHaveLength(600);
    const order = document.chunks.map(({ x, y, z }) => [x, y, z]);
    expect(order).toEqual(
      [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]).map((key) => [...key]),
    );
    for (const chunk of document.chunks)
      expect(Buffer.from(chunk.payload).equals(bytes(`c${chunk.x}.${chunk.y}.${chunk.z}`))).toBe(true);

    const socket = await open(token);
    const { reply, pages } = await loadOverSocket(socket, worldId, roomId);
    expect(reply).toMatchObject({ t: 'ack', d: { content_revision: document.content_revision, count: 600 } });
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.flatMap((page) => page.chunks)).toEqual(document.chunks);
  });

  it('serves chunks changed after the load read its content revision as they were at that revision', async () => {
    const { token, worldId, roomId } = await newWorld();
    const revisions: number[] = [];
    for (const x of [0, 1, 2])
      revisions.push(await put(token, worldId, roomId, [x, 0, 0], bytes(`big${x}`, LARGE)));
    revisions.push(await put(token, worldId, roomId, [3, 0, 0], bytes('small')));
    const asOf = revisions[3] as number;

    const { result, pages } = await loadWithPause(token, worldId, roomId, async () => {
      // Between the pages: rewrite a chunk of the second page, delete another, create a new one.
      await put(token, worldId, roomId, [2, 0, 0], bytes('big2, rewritten'), revisions[2]);
      await remove(token, worldId, roomId, [3, 0, 0], asOf);
      await put(token, worldId, roomId, [4, 0, 0], bytes('created later'));
    });
    expect(await result).toEqual({ content_revision: asOf, count: 4 });
    // Two 300 KiB chunks fill the first page's byte budget.
    expect(pages.map((page) => page.chunks.map((chunk) => [chunk.x, chunk.revision]))).toEqual([
      [
        [0, revisions[0]],
        [1, revisions[1]],
      ],
      [
        [2, revisions[2]],
        [3, revisions[3]],
      ],
    ]);
    const [big2, small] = pages[1]?.chunks ?? [];
    expect(Buffer.from(big2?.payload as Uint8Array).equals(bytes('big2', LARGE))).toBe(true);
    expect(Buffer.from(small?.payload as Uint8Array).equals(bytes('small'))).toBe(true);

    const now = await content(token, worldId, roomId);
    expect(now.chunks.map((chunk) => chunk.x)).toEqual([0, 1, 2, 4]);
    expect(now.content_revision).toBeGreaterThan(asOf);
  });

  it('ends the load with NOT_FOUND instead of an ack when the room is deleted between pages', async () => {
    const { token, worldId } = await newWorld();
    const roomId = await addRoom(token, worldId, 'doomed');
    for (const x of [0, 1, 2]) await put(token, worldId, roomId, [x, 0, 0], bytes(`big${x}`, LARGE));

    const { result, pages } = await loadWithPause(token, worldId, roomId, async () => {
      const deleted = await inject('DELETE', `/api/worlds/${worldId}/rooms/${roomId}`, token);
      expect(deleted.statusCode).toBe(204);
    });
    await expect(result).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(pages).toHaveLength(1);
  });

  it("answers 404 for another user's private world and for a room of another world, and 401 without a token", async () => {
    const { token, worldId, roomId } = await newWorld();
    await put(token, worldId, roomId, [0, 0, 0], bytes('secret'));
    const stranger = await registerUser(app());
    const refused = await getContent(stranger.access_token, worldId, roomId);
    expect(refused.statusCode).toBe(404);
    expect(refused.json()).toMatchObject({ code: 'NOT_FOUND' });

    const second = await newWorld();
    const foreignRoom = await getContent(token, worldId, second.roomId);
    expect(foreignRoom.statusCode).toBe(404);
    expect(foreignRoom.json()).toMatchObject({ code: 'NOT_FOUND' });

    const anonymous = await getContent(undefined, worldId, roomId);
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it("lets any signed-in user load a public world's room", async () => {
    const { token, worldId, roomId } = await newWorld('public');
    await put(token, worldId, roomId, [0, 0, 0], bytes('shared'));
    const visitor = await registerUser(app());
    expect((await content(visitor.access_token, worldId, roomId)).count).toBe(1);
  });

  it('answers chunks.load for an unknown world with a NOT_FOUND error frame and no pages', async () => {
    const { token, roomId } = await newWorld();
    const socket = await open(token);
    const unknown = '01a1ffb2-0000-7000-8000-000000000000';
    const { reply, pages } = await loadOverSocket(socket, unknown, roomId);
    expect(reply).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
    expect(pages).toEqual([]);
  });

  it('refuses chunks.load without a request id, which its pages would have to carry, and sends no page', async () => {
    const { token, worldId, roomId } = await newWorld();
    const socket = await open(token);
    socket.sendFrame({ t: 'chunks.load', d: { world_id: worldId, room_id: roomId } });
    const error = await socket.next((f) => f.t === 'error');
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'id' }] });
    expect(socket.frames.filter((f) => f.t === 'chunks.page')).toEqual([]);
  });
});
