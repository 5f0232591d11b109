import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_BYTES } from '../../protocol/chunk-codec.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';

const bytes = (id: string, x?: number) => chunkBytes(id, x, { growth: 3 });

describe('single chunks', () => {
  const app = useTestApp();
  const sql = <Row = Record<string, unknown>>(query: string, params: unknown[] = []) =>
    queryRows<Row>(app().db, query, params);
  const revisionsOf = async (worldId: string) =>
    Number(
      (
        await sql<{ n: string }>('select count(*)::text as n from chunk_revisions where world_id = ?', [
          worldId,
        ])
      )[0]?.n,
    );

  async function setup(visibility = 'private') {
    const owner = await registerUser(app());
    const { worldId, mainRoomId: room } = await createWorld(app(), owner.access_token, { visibility });
    const url = (x = 1, y = 2, z = -3) => `/api/worlds/${worldId}/rooms/${room}/chunks/${x}/${y}/${z}`;
    return { owner, token: owner.access_token, worldId, room, url };
  }

  /** Codec bytes, or the JSON view: a value, or text as it is (JSON.stringify would write -0 as 0). */
  const put = (token: string, url: string, body: Buffer | unknown, headers: Record<string, string> = {}) =>
    app().http.inject({
      method: 'PUT',
      url,
      headers: {
        ...bearer(token),
        'content-type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json',
        ...headers,
      },
      payload: Buffer.isBuffer(body) || typeof body === 'string' ? body : JSON.stringify(body),
    });
  const get = (token: string, url: string, headers: Record<string, string> = {}) =>
    app().http.inject({ method: 'GET', url, headers: { ...bearer(token), ...headers } });

  it('creates a chunk with If-None-Match: * and reads back the same bytes with its revision as ETag', async () => {
    const { token, worldId, url } = await setup();
    const created = await put(token, url(), bytes('a'), { 'if-none-match': '*' });
    expect(created.statusCode, created.body).toBe(200);
    const { revision, content_revision } = created.json();
    expect(content_revision).toBe(revision);
    expect(created.headers.etag).toBe(`"${revision}"`);

    const read = await get(token, url());
    expect(read.statusCode).toBe(200);
    expect(read.headers['content-type']).toBe('application/octet-stream');
    expect(read.headers.etag).toBe(`"${revision}"`);
    expect(read.rawPayload.equals(bytes('a'))).toBe(true);
    expect((await get(token, url(), { 'if-none-match': `"${revision}"` })).statusCode).toBe(304);

    const world = await get(token, `/api/worlds/${worldId}`);
    expect(world.json().content_revision).toBe(revision);
  });

  it('replaces a chunk with If-Match of its current revision, appending a revision', async () => {
    const { token, worldId, url } = await setup();
    const first = (await put(token, url(), bytes('a'), { 'if-none-match': '*' })).json();
    const second = await put(token, url(), bytes('b'), { 'if-match': `"${first.revision}"` });
    expect(second.statusCode).toBe(200);
    expect(second.json().revision).toBeGreaterThan(first.revision);
    expect((await get(token, url())).rawPayload.equals(bytes('b'))).toBe(true);
    expect(await revisionsOf(worldId)).toBe(2);
  });

  it('refuses a stale If-Match with 409 and the current revision, writing nothing', async () => {
    const { token, worldId, url } = await setup();
    const first = (await put(token, url(), bytes('a'), { 'if-none-match': '*' })).json();
    await put(token, url(), bytes('b'), { 'if-match': `"${first.revision}"` });
    const current = (await get(token, url())).headers.etag;
    const stale = await put(token, url(), bytes('c'), { 'if-match': `"${first.revision}"` });
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({
      code: 'REVISION_CONFLICT',
      current_revision: Number(JSON.parse(current as string)),
    });
    expect(await revisionsOf(worldId)).toBe(2);
  });

  it('refuses If-None-Match: * when the chunk exists (409)', async () => {
    const { token, worldId, url } = await setup();
    await put(token, url(), bytes('a'), { 'if-none-match': '*' });
    const again = await put(token, url(), bytes('b'), { 'if-none-match': '*' });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('REVISION_CONFLICT');
    expect(await revisionsOf(worldId)).toBe(1);
  });

  it('refuses a write without a precondition (428) and writes nothing', async () => {
    const { token, worldId, url } = await setup();
    const response = await put(token, url(), bytes('a'));
    expect(response.statusCode).toBe(428);
    expect(response.json().code).toBe('PRECONDITION_REQUIRED');
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it.each([
    ['a malformed If-Match', { 'if-match': 'abc' }, 'if-match'],
    ['both preconditions', { 'if-match': '"1"', 'if-none-match': '*' }, 'if-match'],
    ['an If-None-Match other than *', { 'if-none-match': '"4"' }, 'if-none-match'],
  ])('refuses %s (422) and writes nothing', async (_case, headers, path) => {
    const { token, worldId, url } = await setup();
    const response = await put(token, url(), bytes('a'), headers);
    expect(response.statusCode).toBe(422);
    expect(response.json().errors[0].path).toBe(path);
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it('refuses an undecodable payload with 422 naming the byte offset, and writes nothing', async () => {
    const { token, worldId, url } = await setup();
    const truncated = bytes('a').subarray(0, 20);
    const response = await put(token, url(), truncated, { 'if-none-match': '*' });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'INVALID_CHUNK', offset: expect.any(Number) });
    expect(response.json().offset).toBeLessThanOrEqual(20);
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it('refuses a payload over 1 MiB with 413 and writes nothing', async () => {
    const { token, worldId, url } = await setup();
    const response = await put(token, url(), Buffer.alloc(MAX_CHUNK_BYTES + 1), { 'if-none-match': '*' });
    expect(response.statusCode).toBe(413);
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it('refuses coordinates outside 32-bit signed integers (422)', async () => {
    const { token, url } = await setup();
    for (const x of [2147483648, -2147483649, 1.5]) {
      const response = await put(token, url(x), bytes('a'), { 'if-none-match': '*' });
      expect(response.statusCode).toBe(422);
    }
    const edge = await put(token, url(2147483647, -2147483648, 0), bytes('a'), { 'if-none-match': '*' });
    expect(edge.statusCode).toBe(200);
  });

  it('accepts the JSON view, stores float32 values and reads them back with -0 kept', async () => {
    const { token, url } = await setup();
    // Written by hand: JSON.stringify would write -0 as 0.
    const view =
      '{"objects":[{"id":"lamp","asset_id":"asset.lamp","position":[0.1,-0,1e-45],"rotation":[0,0,0,1],"scale":[1,1,1]}]}';
    const created = await put(token, url(), view, { 'if-none-match': '*' });
    expect(created.statusCode, created.body).toBe(200);
    const read = await get(token, `${url()}?format=json`);
    expect(read.headers['content-type']).toMatch(/^application\/json/);
    // 1e-45 is below the smallest float32 subnormal's half-way point, so it becomes that subnormal.
    expect(read.body).toContain('"position":[0.10000000149011612,-0,1.401298464324817e-45]');
    expect((await get(token, url(), { accept: 'application/json' })).body).toBe(read.body);
  });

  it('refuses a JSON view value beyond float32 range with 422 naming it', async () => {
    const { token, worldId, url } = await setup();
    const view = {
      objects: [
        { id: 'far', asset_id: 'a', position: [3.5e38, 0, 0], rotation: [0, 0, 0, 1], scale: [1, 1, 1] },
      ],
    };
    const response = await put(token, url(), view, { 'if-none-match': '*' });
    expect(response.statusCode).toBe(422);
    expect(response.json().errors[0].path).toBe('objects[0].position[0]');
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it('keeps __proto__ and constructor keys in JSON view props as plain data', async () => {
    const { token, url } = await setup();
    const view =
      '{"objects":[{"id":"p","asset_id":"a","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1],"props":{"__proto__":{"admin":true},"constructor":1}}]}';
    const created = await put(token, url(), view, { 'if-none-match': '*' });
    expect(created.statusCode, created.body).toBe(200);
    const read = await get(token, `${url()}?format=json`);
    expect(read.body).toContain('"props":{"__proto__":{"admin":true},"constructor":1}');
  });

  it('refuses JSON view props nested deeper than 16 levels (422) and writes nothing', async () => {
    const { token, worldId, url } = await setup();
    const props = `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`;
    const view = `{"objects":[{"id":"p","asset_id":"a","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1],"props":${props}}]}`;
    const response = await put(token, url(), view, { 'if-none-match': '*' });
    expect(response.statusCode).toBe(422);
    expect(response.json().errors[0].path).toMatch(/^objects\[0\]\.props/);
    expect(await revisionsOf(worldId)).toBe(0);
  });

  it('deletes a chunk as a tombstone revision; it reads as 404 and can be created again', async () => {
    const { token, worldId, room, url } = await setup();
    const created = (await put(token, url(), bytes('a'), { 'if-none-match': '*' })).json();
    const deleted = await app().http.inject({
      method: 'DELETE',
      url: url(),
      headers: { ...bearer(token), 'if-match': `"${created.revision}"` },
    });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().revision).toBeGreaterThan(created.revision);
    expect((await get(token, url())).statusCode).toBe(404);
    const list = await get(token, `/api/worlds/${worldId}/rooms/${room}/chunks`);
    expect(list.json()).toEqual({ items: [], next_cursor: null });
    expect(
      await sql('select tombstone from chunk_revisions where world_id = ? order by id', [worldId]),
    ).toEqual([{ tombstone: false }, { tombstone: true }]);
    expect((await put(token, url(), bytes('b'), { 'if-none-match': '*' })).statusCode).toBe(200);
  });

  it('answers 404 to deleting a chunk that does not exist', async () => {
    const { token, url } = await setup();
    const response = await app().http.inject({
      method: 'DELETE',
      url: url(),
      headers: { ...bearer(token), 'if-match': '*' },
    });
    expect(response.statusCode).toBe(404);
  });

  it('lets readers of a public world read chunks but not write them (403); hides private ones (404)', async () => {
    const open = await setup('public');
    const closed = await setup('private');
    const reader = await registerUser(app());
    await put(open.token, open.url(), bytes('a'), { 'if-none-match': '*' });
    expect((await get(reader.access_token, open.url())).statusCode).toBe(200);
    const write = await put(reader.access_token, open.url(), bytes('b'), { 'if-match': '*' });
    expect(write.statusCode).toBe(403);
    expect(
      (await put(reader.access_token, closed.url(), bytes('b'), { 'if-none-match': '*' })).statusCode,
    ).toBe(404);
    expect(await revisionsOf(open.worldId)).toBe(1);
    expect(await revisionsOf(closed.worldId)).toBe(0);
  });

  it('lists live chunks with their revisions in x, y, z order, page by page', async () => {
    const { token, worldId, room, url } = await setup();
    const keys = [
      [2, 0, 0],
      [-1, 5, 5],
      [0, 0, 1],
      [0, 0, -1],
    ] as const;
    for (const [x, y, z] of keys) await put(token, url(x, y, z), bytes('a'), { 'if-none-match': '*' });
    const seen: number[][] = [];
    let cursor: string | null = null;
    do {
      const page: { items: { x: number; y: number; z: number }[]; next_cursor: string | null } = (
        await get(
          token,
          `/api/worlds/${worldId}/rooms/${room}/chunks?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).json();
      seen.push(...page.items.map((c: { x: number; y: number; z: number }) => [c.x, c.y, c.z]));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([
      [-1, 5, 5],
      [0, 0, -1],
      [0, 0, 1],
      [2, 0, 0],
    ]);
  });

  it('lets exactly one of 20 concurrent writers with the same If-Match win; the others get 409', async () => {
    const { token, worldId, url } = await setup();
    const base = (await put(token, url(), bytes('base'), { 'if-none-match': '*' })).json();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        put(token, url(), bytes(`w${i}`), { 'if-match': `"${base.revision}"` }),
      ),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    const winner = answers.findIndex((a) => a.statusCode === 200);
    expect((await get(token, url())).rawPayload.equals(bytes(`w${winner}`))).toBe(true);
    expect(await revisionsOf(worldId)).toBe(2);
  });
});
