import { encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { encodeChunk, MAX_CHUNK_BYTES } from '../../protocol/chunk-codec.js';
import { MAX_BATCH_WRITES } from '../../protocol/chunks.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createRoom, createWorld } from '../helpers/worlds.js';
import { chunkOfSize } from './content-fixtures.js';

const bytes = (id: string, x?: number) => chunkBytes(id, x);
const b64 = (id: string, x?: number) => bytes(id, x).toString('base64');

/** Bytes that are no chunk: the magic is wrong at byte 0. */
const NOT_A_CHUNK = Buffer.from('definitely not the ACHK magic, just noise \x00\x01\x02\xff');

interface Write {
  room_id: string;
  x: number;
  y: number;
  z: number;
  payload?: string | Uint8Array;
  chunk?: unknown;
  delete?: true;
  expected_revision?: number | null;
}

describe('batch chunk writes (POST /api/worlds/{world_id}/chunks/batch)', () => {
  const app = useTestApp();
  const sql = <Row = Record<string, unknown>>(query: string, params: unknown[] = []) =>
    queryRows<Row>(app().db, query, params);

  /** What a refused batch must leave as it was: the world's revision rows and its content revision. */
  async function stateOf(worldId: string) {
    const [row] = await sql<{ revisions: string; content_revision: string }>(
      `select (select count(*) from chunk_revisions where world_id = ?)::text as revisions,
              content_revision::text as content_revision
       from worlds where id = ?`,
      [worldId, worldId],
    );
    return { revisions: Number(row?.revisions), content_revision: Number(row?.content_revision) };
  }

  async function setup(visibility = 'private') {
    const owner = await registerUser(app());
    const { worldId, mainRoomId: main } = await createWorld(app(), owner.access_token, { visibility });
    const cave = await createRoom(app(), owner.access_token, worldId, 'cave');
    const chunkUrl = (room: string, x: number, y: number, z: number) =>
      `/api/worlds/${worldId}/rooms/${room}/chunks/${x}/${y}/${z}`;
    return { owner, token: owner.access_token, worldId, main, cave, chunkUrl };
  }

  const batchUrl = (worldId: string) => `/api/worlds/${worldId}/chunks/batch`;

  /** A JSON batch (any value, sent as JSON text; a string is sent as it is). */
  const postJson = (token: string | undefined, worldId: string, body: unknown) =>
    app().http.inject({
      method: 'POST',
      url: batchUrl(worldId),
      headers: { ...(token ? bearer(token) : {}), 'content-type': 'application/json' },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });

  /** A msgpack batch: a value to encode, or the body's bytes as they are. */
  const postMsgpack = (token: string | undefined, worldId: string, body: unknown) =>
    app().http.inject({
      method: 'POST',
      url: batchUrl(worldId),
      headers: { ...(token ? bearer(token) : {}), 'content-type': 'application/msgpack' },
      payload: Buffer.isBuffer(body) ? body : Buffer.from(encode(body)),
    });

  const get = (token: string, url: string) =>
    app().http.inject({ method: 'GET', url, headers: bearer(token) });

  /** Creates chunks (0..n-1, 0, 0) in `room` with one batch and answers their revisions. */
  async function seed(token: string, worldId: string, room: string, n: number): Promise<number[]> {
    const writes = Array.from({ length: n }, (_, i) => ({
      room_id: room,
      x: i,
      y: 0,
      z: 0,
      payload: b64(`seed${i}`),
      expected_revision: null,
    }));
    const response = await postJson(token, worldId, { writes });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().revisions;
  }

  describe('writes', () => {
    it('creates chunks in two rooms from a JSON batch of base64 payloads; each reads back byte for byte', async () => {
      const { token, worldId, main, cave, chunkUrl, owner } = await setup();
      const writes: Write[] = [
        { room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null },
        { room_id: cave, x: 0, y: 0, z: 0, payload: b64('b'), expected_revision: null },
        { room_id: main, x: -5, y: 7, z: 2147483647, payload: b64('c', 3), expected_revision: null },
        { room_id: cave, x: -2147483648, y: 1, z: 2, payload: b64('d', -4), expected_revision: null },
      ];
      const response = await postJson(token, worldId, { writes });
      expect(response.statusCode, response.body).toBe(200);
      const { content_revision, revisions } = response.json() as {
        content_revision: number;
        revisions: number[];
      };
      expect(revisions).toHaveLength(4);
      for (let i = 1; i < revisions.length; i++)
        expect(revisions[i]).toBeGreaterThan(revisions[i - 1] as number);
      expect(content_revision).toBe(revisions[3]);
      expect(content_revision).toBe(Math.max(...revisions));

      const expected = [bytes('a'), bytes('b'), bytes('c', 3), bytes('d', -4)];
      for (const [i, write] of writes.entries()) {
        const read = await get(token, chunkUrl(write.room_id, write.x, write.y, write.z));
        expect(read.statusCode).toBe(200);
        expect(read.headers.etag).toBe(`"${revisions[i]}"`);
        expect(read.rawPayload.equals(expected[i] as Buffer)).toBe(true);
      }
      const world = await get(token, `/api/worlds/${worldId}`);
      expect(world.json().content_revision).toBe(content_revision);
      expect(await stateOf(worldId)).toEqual({ revisions: 4, content_revision });
      const authors = await sql<{ author_id: string; tombstone: boolean }>(
        'select author_id, tombstone from chunk_revisions where world_id = ? order by id',
        [worldId],
      );
      expect(authors).toEqual(Array(4).fill({ author_id: owner.user.id, tombstone: false }));
    });

    it('encodes a JSON-view chunk on the server, keeping float32 values as stored', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      // Written by hand so that `__proto__` in props is a key, as a client would send it.
      const body = `{"writes":[{"room_id":"${main}","x":1,"y":1,"z":1,"expected_revision":null,"chunk":{"objects":[{"id":"lamp","asset_id":"asset.lamp","position":[0.1,2,-3],"rotation":[0,0,0,1],"scale":[1,1,1],"props":{"__proto__":"kept","color":"red"}}]}},{"room_id":"${main}","x":2,"y":1,"z":1,"expected_revision":null,"payload":"${b64('b')}"}]}`;
      const response = await postJson(token, worldId, body);
      expect(response.statusCode, response.body).toBe(200);

      const json = await get(token, `${chunkUrl(main, 1, 1, 1)}?format=json`);
      expect(json.statusCode).toBe(200);
      expect(json.body).toContain('"position":[0.10000000149011612,2,-3]');
      expect(json.body).toContain('"props":{"__proto__":"kept","color":"red"}');
      const binary = await get(token, chunkUrl(main, 1, 1, 1));
      const encoded = encodeChunk({
        objects: [
          {
            id: 'lamp',
            asset_id: 'asset.lamp',
            position: Float32Array.of(0.1, 2, -3),
            rotation: Float32Array.of(0, 0, 0, 1),
            scale: Float32Array.of(1, 1, 1),
            props: JSON.parse('{"__proto__":"kept","color":"red"}'),
          },
        ],
      });
      expect(binary.rawPayload.equals(Buffer.from(encoded))).toBe(true);
      expect((await get(token, chunkUrl(main, 2, 1, 1))).rawPayload.equals(bytes('b'))).toBe(true);
    });

    it('accepts the same batch as application/msgpack with raw bin payloads', async () => {
      const { token, worldId, main, cave, chunkUrl } = await setup();
      const writes: Write[] = [
        { room_id: main, x: 0, y: 0, z: 0, payload: bytes('m1'), expected_revision: null },
        { room_id: cave, x: 3, y: -3, z: 9, payload: bytes('m2', 8), expected_revision: null },
        { room_id: main, x: 0, y: 0, z: 1, payload: bytes('m3'), expected_revision: null },
      ];
      const response = await postMsgpack(token, worldId, { writes });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const { content_revision, revisions } = response.json() as {
        content_revision: number;
        revisions: number[];
      };
      expect(revisions).toHaveLength(3);
      expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);
      expect(new Set(revisions).size).toBe(3);
      expect(content_revision).toBe(revisions[2]);
      for (const [i, write] of writes.entries()) {
        const read = await get(token, chunkUrl(write.room_id, write.x, write.y, write.z));
        expect(read.headers.etag).toBe(`"${revisions[i]}"`);
        expect(read.rawPayload.equals(write.payload as Buffer)).toBe(true);
      }
      expect(await stateOf(worldId)).toEqual({ revisions: 3, content_revision });
    });

    it('replaces, deletes (a tombstone) and creates chunks in one batch, and writes over the tombstone with its revision', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      const [revA, revB] = await seed(token, worldId, main, 2);
      const mixed = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('a2'), expected_revision: revA },
          { room_id: main, x: 1, y: 0, z: 0, delete: true, expected_revision: revB },
          { room_id: main, x: 2, y: 0, z: 0, payload: b64('c'), expected_revision: null },
        ],
      });
      expect(mixed.statusCode, mixed.body).toBe(200);
      const [newA, tomb, revC] = mixed.json().revisions as number[];
      expect(newA).toBeGreaterThan(revB as number);
      expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(bytes('a2'))).toBe(true);
      expect((await get(token, chunkUrl(main, 1, 0, 0))).statusCode).toBe(404);
      expect((await get(token, chunkUrl(main, 2, 0, 0))).rawPayload.equals(bytes('c'))).toBe(true);
      expect(
        await sql('select x, tombstone from chunk_revisions where world_id = ? order by id', [worldId]),
      ).toEqual([
        { x: 0, tombstone: false },
        { x: 1, tombstone: false },
        { x: 0, tombstone: false },
        { x: 1, tombstone: true },
        { x: 2, tombstone: false },
      ]);

      const again = await postJson(token, worldId, {
        writes: [{ room_id: main, x: 1, y: 0, z: 0, payload: b64('b2'), expected_revision: tomb }],
      });
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json().revisions[0]).toBeGreaterThan(revC as number);
      expect((await get(token, chunkUrl(main, 1, 0, 0))).rawPayload.equals(bytes('b2'))).toBe(true);
    });

    it('recreates a deleted chunk with expected_revision null', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      const [rev] = await seed(token, worldId, main, 1);
      const del = await postMsgpack(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, delete: true, expected_revision: rev }],
      });
      expect(del.statusCode, del.body).toBe(200);
      const recreate = await postMsgpack(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('back'), expected_revision: null }],
      });
      expect(recreate.statusCode, recreate.body).toBe(200);
      expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(bytes('back'))).toBe(true);
    });

    it('writes 100 chunks of 16 KiB in one batch, as JSON and as msgpack', async () => {
      const { token, worldId, main, cave, chunkUrl } = await setup();
      const payloads = Array.from({ length: 100 }, (_, i) => chunkOfSize(`big${i}`, 16 * 1024));
      const json = await postJson(token, worldId, {
        writes: payloads.map((p, i) => ({
          room_id: main,
          x: i % 10,
          y: Math.floor(i / 10),
          z: 0,
          payload: p.toString('base64'),
          expected_revision: null,
        })),
      });
      expect(json.statusCode, json.body).toBe(200);
      expect(json.json().revisions).toHaveLength(100);
      const binary = await postMsgpack(token, worldId, {
        writes: payloads.map((p, i) => ({
          room_id: cave,
          x: i % 10,
          y: Math.floor(i / 10),
          z: 0,
          payload: p,
          expected_revision: null,
        })),
      });
      expect(binary.statusCode, binary.body).toBe(200);
      const { revisions, content_revision } = binary.json() as {
        revisions: number[];
        content_revision: number;
      };
      expect(revisions).toHaveLength(100);
      expect(revisions[0]).toBeGreaterThan(json.json().content_revision);
      expect(content_revision).toBe(revisions[99]);
      expect(await stateOf(worldId)).toEqual({ revisions: 200, content_revision });
      expect((await get(token, chunkUrl(main, 9, 9, 0))).rawPayload.equals(payloads[99] as Buffer)).toBe(
        true,
      );
      expect((await get(token, chunkUrl(cave, 3, 4, 0))).rawPayload.equals(payloads[43] as Buffer)).toBe(
        true,
      );
    });
  });

  describe('all or nothing', () => {
    it('refuses a batch with one stale expected_revision among 5 writes (409 with its index and current revision), writing nothing', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      const revs = await seed(token, worldId, main, 5);
      // Chunk 3 moves on; a writer still holding its old revision is stale.
      const moved = await postJson(token, worldId, {
        writes: [{ room_id: main, x: 3, y: 0, z: 0, payload: b64('moved'), expected_revision: revs[3] }],
      });
      const current = moved.json().revisions[0] as number;
      const before = await stateOf(worldId);
      const response = await postJson(token, worldId, {
        writes: revs.map((rev, i) => ({
          room_id: main,
          x: i,
          y: 0,
          z: 0,
          payload: b64(`next${i}`),
          expected_revision: rev,
        })),
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({
        code: 'REVISION_CONFLICT',
        index: 3,
        current_revision: current,
        current_deleted: false,
        content_revision: before.content_revision,
      });
      expect(await stateOf(worldId)).toEqual(before);
      expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(bytes('seed0'))).toBe(true);
      expect((await get(token, chunkUrl(main, 3, 0, 0))).rawPayload.equals(bytes('moved'))).toBe(true);
    });

    it('lets exactly one of 10 concurrent batches creating the same chunks win; the others get 409 and write nothing', async () => {
      const { token, worldId, main, cave } = await setup();
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? postMsgpack : postJson)(token, worldId, {
            writes: [
              {
                room_id: cave,
                x: 100 + i,
                y: 0,
                z: 0,
                payload: i % 2 ? bytes(`own${i}`) : b64(`own${i}`),
                expected_revision: null,
              },
              {
                room_id: main,
                x: 0,
                y: 0,
                z: 0,
                payload: i % 2 ? bytes(`w${i}`) : b64(`w${i}`),
                expected_revision: null,
              },
              {
                room_id: main,
                x: 1,
                y: 0,
                z: 0,
                payload: i % 2 ? bytes(`v${i}`) : b64(`v${i}`),
                expected_revision: null,
              },
            ],
          }),
        ),
      );
      const statuses = answers.map((a) => a.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(9);
      const winner = statuses.indexOf(200);
      for (const lost of answers.filter((a) => a.statusCode === 409)) expect(lost.json().index).toBe(1);
      const rows = await sql<{ room_id: string; x: number }>(
        'select room_id, x from chunk_revisions where world_id = ? order by id',
        [worldId],
      );
      expect(rows).toEqual([
        { room_id: cave, x: 100 + winner },
        { room_id: main, x: 0 },
        { room_id: main, x: 1 },
      ]);
      expect((await stateOf(worldId)).content_revision).toBe(answers[winner]?.json().content_revision);
    });

    it('refuses a create (expected_revision null) of a chunk that exists with 409, current_revision and its index', async () => {
      const { token, worldId, main } = await setup();
      const [rev] = await seed(token, worldId, main, 1);
      const before = await stateOf(worldId);
      const response = await postMsgpack(token, worldId, {
        writes: [
          { room_id: main, x: 9, y: 9, z: 9, payload: bytes('new'), expected_revision: null },
          { room_id: main, x: 0, y: 0, z: 0, payload: bytes('dup'), expected_revision: null },
        ],
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'REVISION_CONFLICT', index: 1, current_revision: rev });
      expect(await stateOf(worldId)).toEqual(before);
    });

    it('refuses a replace of a chunk that never existed with 409 and current_revision null', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: 1 }],
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({
        code: 'REVISION_CONFLICT',
        index: 0,
        current_revision: null,
        current_deleted: true,
      });
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a batch with one undecodable payload (422 INVALID_CHUNK with the byte offset and the write), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      await seed(token, worldId, main, 1);
      const before = await stateOf(worldId);
      const writes = Array.from({ length: 5 }, (_, i) => ({
        room_id: main,
        x: 10 + i,
        y: 0,
        z: 0,
        payload: (i === 2 ? NOT_A_CHUNK : bytes(`w${i}`)).toString('base64'),
        expected_revision: null,
      }));
      const response = await postJson(token, worldId, { writes });
      expect(response.statusCode).toBe(422);
      const body = response.json();
      expect(body).toMatchObject({ code: 'INVALID_CHUNK', offset: 0 });
      expect(body.errors[0].path).toBe('body.writes.2.payload');
      expect(await stateOf(worldId)).toEqual(before);
      // Named like every other failing write of a batch (409, 428, 404 carry it).
      expect(body.index).toBe(2);
    });

    it('refuses a truncated msgpack payload (422 INVALID_CHUNK with an offset inside it), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postMsgpack(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: bytes('ok'), expected_revision: null },
          { room_id: main, x: 1, y: 0, z: 0, payload: bytes('cut').subarray(0, 20), expected_revision: null },
        ],
      });
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({ code: 'INVALID_CHUNK', offset: expect.any(Number) });
      expect(response.json().offset).toBeLessThanOrEqual(20);
      expect(response.json().errors[0].path).toBe('body.writes.1.payload');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a JSON-view chunk with a value beyond float32 range (422 naming its path), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('ok'), expected_revision: null },
          {
            room_id: main,
            x: 1,
            y: 0,
            z: 0,
            expected_revision: null,
            chunk: {
              objects: [
                {
                  id: 'far',
                  asset_id: 'a',
                  position: [0, 1e40, 0],
                  rotation: [0, 0, 0, 1],
                  scale: [1, 1, 1],
                },
              ],
            },
          },
        ],
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().code).toBe('VALIDATION_FAILED');
      expect(response.json().errors[0].path).toBe('body.writes.1.chunk.objects[0].position[1]');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a JSON-view chunk that is not a chunk (422 naming the field), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      for (const [view, path] of [
        [null, 'body.writes.0.chunk.'],
        [{ objects: [{ id: 'x' }] }, 'body.writes.0.chunk.objects[0]'],
        [{ objects: [], extra: 1 }, 'body.writes.0.chunk.extra'],
      ] as const) {
        const response = await postJson(token, worldId, {
          writes: [{ room_id: main, x: 0, y: 0, z: 0, chunk: view, expected_revision: null }],
        });
        expect(response.statusCode, JSON.stringify(view)).toBe(422);
        expect(response.json().code).toBe('VALIDATION_FAILED');
        expect(response.json().errors[0].path).toMatch(new RegExp(`^${path.replace(/[.[\]]/g, '\\$&')}`));
      }
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a base64 payload over 1 MiB with 413 PAYLOAD_TOO_LARGE naming the write, writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('ok'), expected_revision: null },
          {
            room_id: main,
            x: 1,
            y: 0,
            z: 0,
            payload: Buffer.alloc(MAX_CHUNK_BYTES + 1).toString('base64'),
            expected_revision: null,
          },
        ],
      });
      expect(response.statusCode).toBe(413);
      expect(response.json().code).toBe('PAYLOAD_TOO_LARGE');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
      expect(response.json().index).toBe(1);
    });

    it('refuses a base64 payload well over 1 MiB with 422 on its path (the schema bounds the base64 length), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [
          {
            room_id: main,
            x: 1,
            y: 0,
            z: 0,
            payload: Buffer.alloc(MAX_CHUNK_BYTES + 1024).toString('base64'),
            expected_revision: null,
          },
        ],
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().code).toBe('VALIDATION_FAILED');
      expect(response.json().errors[0].path).toBe('body.writes.0.payload');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a msgpack bin payload over 1 MiB with 413 PAYLOAD_TOO_LARGE, writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postMsgpack(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: bytes('ok'), expected_revision: null },
          {
            room_id: main,
            x: 1,
            y: 0,
            z: 0,
            payload: Buffer.alloc(MAX_CHUNK_BYTES + 1),
            expected_revision: null,
          },
        ],
      });
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
      expect(response.statusCode, response.body).toBe(413);
      expect(response.json().code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('accepts a msgpack bin payload of exactly 1 MiB when it is a valid chunk', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      const payload = chunkOfSize('max', MAX_CHUNK_BYTES);
      const response = await postMsgpack(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, payload, expected_revision: null }],
      });
      expect(response.statusCode, response.body).toBe(200);
      expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(payload)).toBe(true);
    });
  });

  describe('expected_content_revision', () => {
    it('applies a batch without per-write expected_revision when the world is at the expected content revision', async () => {
      const { token, worldId, main, chunkUrl } = await setup();
      await seed(token, worldId, main, 2);
      const before = await stateOf(worldId);
      const response = await postJson(token, worldId, {
        expected_content_revision: before.content_revision,
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('over') },
          { room_id: main, x: 1, y: 0, z: 0, delete: true },
          { room_id: main, x: 5, y: 0, z: 0, payload: b64('fresh') },
        ],
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().content_revision).toBeGreaterThan(before.content_revision);
      expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(bytes('over'))).toBe(true);
      expect((await get(token, chunkUrl(main, 1, 0, 0))).statusCode).toBe(404);
      expect((await get(token, chunkUrl(main, 5, 0, 0))).rawPayload.equals(bytes('fresh'))).toBe(true);
    });

    it('applies expected_content_revision 0 to a world never written', async () => {
      const { token, worldId, main } = await setup();
      const response = await postMsgpack(token, worldId, {
        expected_content_revision: 0,
        writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('first') }],
      });
      expect(response.statusCode, response.body).toBe(200);
    });

    it('refuses a stale expected_content_revision with 409 and the content revision, writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const [first] = await seed(token, worldId, main, 1);
      const moved = await postJson(token, worldId, {
        writes: [{ room_id: main, x: 7, y: 0, z: 0, payload: b64('x'), expected_revision: null }],
      });
      expect(moved.statusCode).toBe(200);
      const before = await stateOf(worldId);
      const response = await postJson(token, worldId, {
        expected_content_revision: first,
        writes: [{ room_id: main, x: 8, y: 0, z: 0, payload: b64('late') }],
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({
        code: 'REVISION_CONFLICT',
        content_revision: before.content_revision,
        expected_content_revision: first,
      });
      expect(await stateOf(worldId)).toEqual(before);
    });

    it('still checks a per-write expected_revision when the content revision matches', async () => {
      const { token, worldId, main } = await setup();
      const [rev] = await seed(token, worldId, main, 1);
      const before = await stateOf(worldId);
      const response = await postJson(token, worldId, {
        expected_content_revision: before.content_revision,
        writes: [
          { room_id: main, x: 1, y: 0, z: 0, payload: b64('b') },
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: (rev as number) + 1000 },
        ],
      });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'REVISION_CONFLICT', index: 1, current_revision: rev });
      expect(await stateOf(worldId)).toEqual(before);
    });
  });

  describe('refused batches', () => {
    it('answers 428 PRECONDITION_REQUIRED naming the write without expected_revision, writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null },
          { room_id: main, x: 1, y: 0, z: 0, payload: b64('b') },
        ],
      });
      expect(response.statusCode).toBe(428);
      expect(response.json()).toMatchObject({ code: 'PRECONDITION_REQUIRED', index: 1 });
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses two writes to the same chunk in one batch (422 naming the second), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null },
          { room_id: main, x: 1, y: 0, z: 0, payload: b64('b'), expected_revision: null },
          { room_id: main, x: 0, y: 0, z: 0, payload: b64('c'), expected_revision: null },
        ],
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().code).toBe('VALIDATION_FAILED');
      expect(response.json().errors[0].path).toBe('body.writes.2');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('answers 404 naming the write whose room belongs to another world, writing nothing in either', async () => {
      const mine = await setup();
      const other = await setup();
      const before = await stateOf(other.worldId);
      for (const foreign of [other.main, '00000000-0000-7000-8000-000000000000', 'not-a-uuid']) {
        const response = await postJson(mine.token, mine.worldId, {
          writes: [
            { room_id: mine.main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null },
            { room_id: foreign, x: 0, y: 0, z: 0, payload: b64('b'), expected_revision: null },
          ],
        });
        expect(response.statusCode, foreign).toBe(404);
        expect(response.json()).toMatchObject({ code: 'NOT_FOUND', index: 1 });
      }
      expect(await stateOf(mine.worldId)).toEqual({ revisions: 0, content_revision: 0 });
      expect(await stateOf(other.worldId)).toEqual(before);
    });

    it('names the write (index 0) when the only write of a batch names a room of another world', async () => {
      const mine = await setup();
      const other = await setup();
      const response = await postJson(mine.token, mine.worldId, {
        writes: [{ room_id: other.main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null }],
      });
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe('NOT_FOUND');
      expect(await stateOf(mine.worldId)).toEqual({ revisions: 0, content_revision: 0 });
      // 428, 409 and a 404 delete name index 0 for a batch of one write; a foreign room should too.
      expect(response.json().index).toBe(0);
    });

    it('answers 404 naming a delete of a chunk never written or already deleted, writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const [rev] = await seed(token, worldId, main, 1);
      const tomb = await postJson(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, delete: true, expected_revision: rev }],
      });
      const tombstone = tomb.json().revisions[0] as number;
      const before = await stateOf(worldId);
      const never = await postJson(token, worldId, {
        writes: [
          { room_id: main, x: 5, y: 0, z: 0, payload: b64('a'), expected_revision: null },
          { room_id: main, x: 6, y: 0, z: 0, delete: true, expected_revision: null },
        ],
      });
      expect(never.statusCode).toBe(404);
      expect(never.json()).toMatchObject({ code: 'NOT_FOUND', index: 1 });
      const deleted = await postMsgpack(token, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, delete: true, expected_revision: tombstone }],
      });
      expect(deleted.statusCode).toBe(404);
      expect(deleted.json()).toMatchObject({ code: 'NOT_FOUND', index: 0 });
      expect(await stateOf(worldId)).toEqual(before);
    });

    it('answers 404 for a world that does not exist', async () => {
      const { token, main } = await setup();
      for (const id of ['00000000-0000-7000-8000-000000000000', 'nope']) {
        const response = await postJson(token, id, {
          writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null }],
        });
        expect(response.statusCode, id).toBe(404);
        expect(response.json().code).toBe('NOT_FOUND');
      }
    });
  });

  describe('schema', () => {
    const write = (room: string, extra: Record<string, unknown> = {}) => ({
      room_id: room,
      x: 0,
      y: 0,
      z: 0,
      payload: b64('a'),
      expected_revision: null,
      ...extra,
    });
    const jsonCases: [string, (room: string) => unknown, string][] = [
      ['an empty writes array', () => ({ writes: [] }), 'body.writes'],
      [
        `more than ${MAX_BATCH_WRITES} writes`,
        (room) => ({
          writes: Array.from({ length: MAX_BATCH_WRITES + 1 }, (_, i) => ({ ...write(room), x: i })),
        }),
        'body.writes',
      ],
      ['no writes field', () => ({}), 'body.writes'],
      ['writes that is not an array', (room) => ({ writes: write(room) }), 'body.writes'],
      [
        'a write with payload and delete',
        (room) => ({ writes: [write(room, { delete: true })] }),
        'body.writes.0',
      ],
      [
        'a write with payload and chunk',
        (room) => ({ writes: [write(room, { chunk: { objects: [] } })] }),
        'body.writes.0',
      ],
      [
        'a write with neither payload, chunk nor delete',
        (room) => ({ writes: [write(room, { payload: undefined })] }),
        'body.writes.0',
      ],
      [
        'delete: false',
        (room) => ({ writes: [write(room, { payload: undefined, delete: false })] }),
        'body.writes.0.delete',
      ],
      ['x beyond int32', (room) => ({ writes: [write(room, { x: 2147483648 })] }), 'body.writes.0.x'],
      ['y below int32', (room) => ({ writes: [write(room, { y: -2147483649 })] }), 'body.writes.0.y'],
      ['a fractional z', (room) => ({ writes: [write(room, { z: 1.5 })] }), 'body.writes.0.z'],
      ['a coordinate as a string', (room) => ({ writes: [write(room, { x: '1' })] }), 'body.writes.0.x'],
      [
        'a negative expected_revision',
        (room) => ({ writes: [write(room, { expected_revision: -1 })] }),
        'body.writes.0.expected_revision',
      ],
      [
        'a fractional expected_revision',
        (room) => ({ writes: [write(room, { expected_revision: 1.5 })] }),
        'body.writes.0.expected_revision',
      ],
      [
        'a negative expected_content_revision',
        (room) => ({ expected_content_revision: -1, writes: [write(room)] }),
        'body.expected_content_revision',
      ],
      [
        'an unknown field in a write',
        (room) => ({ writes: [write(room, { colour: 'red' })] }),
        'body.writes.0',
      ],
      ['an unknown field in the batch', (room) => ({ writes: [write(room)], world_id: 'x' }), 'body'],
      [
        'bad base64',
        (room) => ({ writes: [write(room, { payload: 'not base64!!' })] }),
        'body.writes.0.payload',
      ],
      [
        'a room id over 64 characters',
        (room) => ({ writes: [write(room, { room_id: 'r'.repeat(65) })] }),
        'body.writes.0.room_id',
      ],
      ['a body that is an array', (room) => [write(room)], 'body'],
      [
        'a constructor key in a write',
        (room) => ({ writes: [write(room, { constructor: 1 })] }),
        'body.writes.0',
      ],
    ];

    it.each(jsonCases)(
      'refuses a JSON batch with %s (422 VALIDATION_FAILED), writing nothing',
      async (_case, body, path) => {
        const { token, worldId, main } = await setup();
        await seed(token, worldId, main, 1);
        const before = await stateOf(worldId);
        const response = await postJson(token, worldId, body(main));
        expect(response.statusCode, response.body).toBe(422);
        expect(response.json().code).toBe('VALIDATION_FAILED');
        expect(response.json().errors.map((e: { path: string }) => e.path)).toContain(path);
        expect(await stateOf(worldId)).toEqual(before);
      },
    );

    it.each([
      [
        '__proto__ in a write',
        (room: string) =>
          `{"writes":[{"room_id":"${room}","x":0,"y":0,"z":0,"payload":"${b64('a')}","expected_revision":null,"__proto__":{"delete":true}}]}`,
      ],
      [
        '__proto__ in the batch',
        (room: string) =>
          `{"__proto__":{"expected_content_revision":0},"writes":[{"room_id":"${room}","x":0,"y":0,"z":0,"payload":"${b64('a')}"}]}`,
      ],
      ['__proto__ as the only key of a write', () => '{"writes":[{"__proto__":{"room_id":"x"}}]}'],
    ])('refuses a JSON batch with %s (422), writing nothing', async (_case, body) => {
      const { token, worldId, main } = await setup();
      const response = await postJson(token, worldId, body(main));
      expect(response.statusCode, response.body).toBe(422);
      expect(response.json().code).toBe('VALIDATION_FAILED');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses a JSON batch with constructor.prototype (400 MALFORMED_REQUEST), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const body = `{"writes":[{"room_id":"${main}","x":0,"y":0,"z":0,"payload":"${b64('a')}","expected_revision":null,"constructor":{"prototype":{"delete":true}}}]}`;
      const response = await postJson(token, worldId, body);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().code).toBe('MALFORMED_REQUEST');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it.each([
      [
        'a payload as a string',
        (room: string) => ({ writes: [{ ...write(room), payload: b64('a') }] }),
        'body.writes.0.payload',
      ],
      [
        'a JSON-view chunk (JSON only)',
        (room: string) => ({ writes: [{ ...write(room), payload: undefined, chunk: { objects: [] } }] }),
        'body.writes.0',
      ],
      ['an empty writes array', () => ({ writes: [] }), 'body.writes'],
      ['a body that is not a map', () => [1, 2, 3], 'body'],
      [
        'a constructor key in a write',
        (room: string) => ({ writes: [{ ...write(room), payload: bytes('a'), constructor: 1 }] }),
        'body.writes.0',
      ],
      [
        'x beyond int32',
        (room: string) => ({ writes: [{ ...write(room), payload: bytes('a'), x: 2 ** 40 }] }),
        'body.writes.0.x',
      ],
    ])(
      'refuses a msgpack batch with %s (422 VALIDATION_FAILED), writing nothing',
      async (_case, body, path) => {
        const { token, worldId, main } = await setup();
        const response = await postMsgpack(token, worldId, body(main));
        expect(response.statusCode, response.body).toBe(422);
        expect(response.json().code).toBe('VALIDATION_FAILED');
        expect(response.json().errors.map((e: { path: string }) => e.path)).toContain(path);
        expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
      },
    );

    it('refuses a msgpack map with a __proto__ key (400 MALFORMED_REQUEST), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const inWrite = JSON.parse(
        `{"room_id":"${main}","x":0,"y":0,"z":0,"expected_revision":null,"__proto__":{"delete":true}}`,
      );
      inWrite.payload = bytes('a');
      const atTop = JSON.parse('{"__proto__":{"expected_content_revision":0}}');
      atTop.writes = [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('a') }];
      for (const body of [{ writes: [inWrite] }, atTop]) {
        const response = await postMsgpack(token, worldId, body);
        expect(response.statusCode, response.body).toBe(400);
        expect(response.json().code).toBe('MALFORMED_REQUEST');
      }
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses bytes that are not msgpack, truncated or followed by more bytes (400 MALFORMED_REQUEST), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      const valid = Buffer.from(
        encode({
          writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('a'), expected_revision: null }],
        }),
      );
      const bodies = {
        empty: Buffer.alloc(0),
        'not msgpack': Buffer.from([0xc1, 0x00]),
        text: Buffer.from('{"writes":[]}'),
        truncated: valid.subarray(0, valid.length - 10),
        'cut in a header': valid.subarray(0, 1),
        'with trailing bytes': Buffer.concat([valid, Buffer.from([0x01])]),
        'a lying array header': Buffer.from([
          0x81,
          0xa6,
          ...Buffer.from('writes'),
          0xdd,
          0x7f,
          0xff,
          0xff,
          0xff,
        ]),
        'deeply nested': Buffer.from([0x81, 0xa6, ...Buffer.from('writes'), ...Array(40).fill(0x91), 0x01]),
      };
      for (const [name, body] of Object.entries(bodies)) {
        const response = await postMsgpack(token, worldId, body);
        expect(response.statusCode, name).toBe(400);
        expect(response.json().code, name).toBe('MALFORMED_REQUEST');
      }
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('refuses malformed or empty JSON (400 MALFORMED_REQUEST), writing nothing', async () => {
      const { token, worldId, main } = await setup();
      for (const body of [`{"writes":[{"room_id":"${main}"`, '']) {
        const response = await postJson(token, worldId, body);
        expect(response.statusCode, body).toBe(400);
        expect(response.json().code).toBe('MALFORMED_REQUEST');
      }
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it.each(['application/json; charset=utf-8', 'Application/JSON'])(
      'accepts a JSON batch sent as %s (media types are case-insensitive)',
      async (type) => {
        const { token, worldId, main, chunkUrl } = await setup();
        const response = await app().http.inject({
          method: 'POST',
          url: batchUrl(worldId),
          headers: { ...bearer(token), 'content-type': type },
          payload: JSON.stringify({
            writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null }],
          }),
        });
        expect(response.statusCode, response.body).toBe(200);
        expect((await get(token, chunkUrl(main, 0, 0, 0))).rawPayload.equals(bytes('a'))).toBe(true);
      },
    );

    it('accepts a msgpack batch sent as Application/MsgPack', async () => {
      const { token, worldId, main } = await setup();
      const response = await app().http.inject({
        method: 'POST',
        url: batchUrl(worldId),
        headers: { ...bearer(token), 'content-type': 'Application/MsgPack' },
        payload: Buffer.from(
          encode({
            writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('a'), expected_revision: null }],
          }),
        ),
      });
      expect(response.statusCode, response.body).toBe(200);
    });

    it.each(['text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded'])(
      'refuses a %s body with 415 UNSUPPORTED_MEDIA_TYPE, writing nothing',
      async (type) => {
        const { token, worldId, main } = await setup();
        const response = await app().http.inject({
          method: 'POST',
          url: batchUrl(worldId),
          headers: { ...bearer(token), 'content-type': type },
          payload: JSON.stringify({
            writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null }],
          }),
        });
        expect(response.statusCode, response.body).toBe(415);
        expect(response.json().code).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
      },
    );
  });

  describe('authorization', () => {
    const body = (room: string) => ({
      writes: [{ room_id: room, x: 0, y: 0, z: 0, payload: b64('a'), expected_revision: null }],
    });

    it('answers 401 to an anonymous batch, writing nothing', async () => {
      const { worldId, main } = await setup('public');
      const json = await postJson(undefined, worldId, body(main));
      expect(json.statusCode).toBe(401);
      expect(json.json().code).toBe('UNAUTHENTICATED');
      const binary = await postMsgpack(undefined, worldId, {
        writes: [{ room_id: main, x: 0, y: 0, z: 0, payload: bytes('a'), expected_revision: null }],
      });
      expect(binary.statusCode).toBe(401);
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });

    it('answers 403 to a reader of a public world who is not its owner, writing nothing', async () => {
      const { token, worldId, main } = await setup('public');
      await seed(token, worldId, main, 1);
      const before = await stateOf(worldId);
      const reader = await registerUser(app());
      const response = await postJson(reader.access_token, worldId, body(main));
      expect(response.statusCode).toBe(403);
      expect(response.json().code).toBe('FORBIDDEN');
      expect(await stateOf(worldId)).toEqual(before);
    });

    it('answers 404 to a batch on a private world of someone else, writing nothing', async () => {
      const { worldId, main } = await setup('private');
      const stranger = await registerUser(app());
      const response = await postJson(stranger.access_token, worldId, body(main));
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe('NOT_FOUND');
      expect(await stateOf(worldId)).toEqual({ revisions: 0, content_revision: 0 });
    });
  });
});
