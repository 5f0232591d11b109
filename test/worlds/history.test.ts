import { describe, expect, it } from 'vitest';
import { type ChunkObject, encodeChunk } from '../../protocol/chunk-codec.js';
import type { Revision } from '../../protocol/worlds.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** Codec bytes of a chunk with `count` objects, so chunks of different sizes are easy to make. */
function bytes(count = 1): Buffer {
  const object = (i: number): ChunkObject => ({
    id: `o${i}`,
    asset_id: 'asset.tree.oak',
    position: Float32Array.of(i, 0, 0),
    rotation: Float32Array.of(0, 0, 0, 1),
    scale: Float32Array.of(1, 1, 1),
    props: {},
  });
  return Buffer.from(encodeChunk({ objects: Array.from({ length: count }, (_, i) => object(i)) }));
}

interface Page {
  items: Revision[];
  next_cursor: string | null;
  content_revision: number;
}

describe('revision history', () => {
  const app = useTestApp();

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token?: string, payload?: object) =>
    app().http.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });

  async function world(token: string, visibility = 'private') {
    const created = await call('POST', '/api/worlds', token, { name: 'Forest', visibility });
    const body = created.json() as { id: string; rooms: { id: string }[] };
    return { id: body.id, main: body.rooms[0]?.id as string };
  }

  async function room(token: string, worldId: string, name: string): Promise<string> {
    return (await call('POST', `/api/worlds/${worldId}/rooms`, token, { name })).json().id;
  }

  const chunkUrl = (worldId: string, roomId: string, [x, y, z]: number[]) =>
    `/api/worlds/${worldId}/rooms/${roomId}/chunks/${x}/${y}/${z}`;

  /** Creates or replaces a chunk (whatever its state) and returns the new revision. */
  async function write(token: string, url: string, body = bytes()): Promise<number> {
    const current = await call('GET', url, token);
    const precondition =
      current.statusCode === 200 ? { 'if-match': current.headers.etag as string } : { 'if-none-match': '*' };
    const response = await app().http.inject({
      method: 'PUT',
      url,
      headers: { ...bearer(token), 'content-type': 'application/octet-stream', ...precondition },
      payload: body,
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().revision;
  }

  async function remove(token: string, url: string): Promise<number> {
    const response = await app().http.inject({
      method: 'DELETE',
      url,
      headers: { ...bearer(token), 'if-match': '*' },
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().revision;
  }

  async function history(token: string | undefined, worldId: string, query = '') {
    return call('GET', `/api/worlds/${worldId}/revisions${query ? `?${query}` : ''}`, token);
  }

  async function page(token: string, worldId: string, query = ''): Promise<Page> {
    const response = await history(token, worldId, query);
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /** Every revision of the query, following next_cursor; `between` runs after each page. */
  async function allPages(token: string, worldId: string, query: string, between = async () => {}) {
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const next: Page = await page(token, worldId, `${query}${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...next.items.map((item) => item.revision));
      cursor = next.next_cursor;
      await between();
    } while (cursor);
    return seen;
  }

  it('lists a world’s revisions newest first with room, coordinates, payload size, author and time', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const first = await write(owner.access_token, chunkUrl(w.id, w.main, [1, 2, -3]), bytes(1));
    const second = await write(owner.access_token, chunkUrl(w.id, w.main, [4, 5, 6]), bytes(3));

    const listed = await page(owner.access_token, w.id);
    expect(listed.content_revision).toBe(second);
    expect(listed.next_cursor).toBeNull();
    expect(listed.items).toEqual([
      {
        revision: second,
        room_id: w.main,
        x: 4,
        y: 5,
        z: 6,
        deleted: false,
        size: bytes(3).byteLength,
        author_id: owner.user.id,
        created_at: expect.any(String),
      },
      expect.objectContaining({ revision: first, x: 1, y: 2, z: -3, size: bytes(1).byteLength }),
    ]);
    expect(Date.parse(listed.items[0]?.created_at as string)).not.toBeNaN();
  });

  it('lists nothing for a world without writes, at content revision 0', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    expect(await page(owner.access_token, w.id)).toEqual({
      items: [],
      next_cursor: null,
      content_revision: 0,
      horizon: 0,
    });
  });

  it('visits every revision exactly once across pages, even when revisions are written between pages', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const url = chunkUrl(w.id, w.main, [0, 0, 0]);
    const written: number[] = [];
    for (let i = 0; i < 7; i++) written.push(await write(owner.access_token, url));

    const later: number[] = [];
    const seen = await allPages(owner.access_token, w.id, 'limit=2', async () => {
      later.push(await write(owner.access_token, chunkUrl(w.id, w.main, [later.length, 1, 1])));
    });
    expect(seen).toEqual([...written].reverse());

    // What was committed meanwhile is newer than the first page: `since` fetches exactly that.
    const missed = await allPages(owner.access_token, w.id, `limit=2&since=${written.at(-1)}`);
    expect(missed).toEqual([...later].reverse());
  });

  it('shows a deleted chunk as a tombstone revision: deleted true and size 0', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const url = chunkUrl(w.id, w.main, [1, 1, 1]);
    const created = await write(owner.access_token, url);
    const deleted = await remove(owner.access_token, url);

    const { items } = await page(owner.access_token, w.id);
    expect(items.map(({ revision, deleted, size }) => ({ revision, deleted, size }))).toEqual([
      { revision: deleted, deleted: true, size: 0 },
      { revision: created, deleted: false, size: bytes().byteLength },
    ]);
  });

  it('keeps one room’s revisions with room_id, and one chunk’s with room_id, x, y and z', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const hall = await room(owner.access_token, w.id, 'hall');
    const mainA = await write(owner.access_token, chunkUrl(w.id, w.main, [0, 0, 0]));
    const hallA = await write(owner.access_token, chunkUrl(w.id, hall, [0, 0, 0]));
    const hallB = await write(owner.access_token, chunkUrl(w.id, hall, [0, 0, 1]));
    const hallA2 = await write(owner.access_token, chunkUrl(w.id, hall, [0, 0, 0]));
    const hallA3 = await remove(owner.access_token, chunkUrl(w.id, hall, [0, 0, 0]));
    const revisions = async (query: string) =>
      (await page(owner.access_token, w.id, query)).items.map((item) => item.revision);

    expect(await revisions(`room_id=${hall}`)).toEqual([hallA3, hallA2, hallB, hallA]);
    expect(await revisions(`room_id=${w.main}`)).toEqual([mainA]);
    expect(await revisions(`room_id=${hall}&x=0&y=0&z=0`)).toEqual([hallA3, hallA2, hallA]);
    expect(await allPages(owner.access_token, w.id, `room_id=${hall}&x=0&y=0&z=0&limit=1`)).toEqual([
      hallA3,
      hallA2,
      hallA,
    ]);
    expect(await revisions(`room_id=${hall}&x=9&y=9&z=9`)).toEqual([]);
    // The world's content revision, whatever the filter.
    expect((await page(owner.access_token, w.id, `room_id=${w.main}`)).content_revision).toBe(hallA3);
  });

  it('answers 404 for a room_id that names no room of this world', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const elsewhere = await world(owner.access_token);
    for (const roomId of [elsewhere.main, 'not-an-id']) {
      const response = await history(owner.access_token, w.id, `room_id=${roomId}`);
      expect(response.statusCode).toBe(404);
    }
  });

  it('keeps revisions newer than since, newest first', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const written: number[] = [];
    for (let i = 0; i < 4; i++)
      written.push(await write(owner.access_token, chunkUrl(w.id, w.main, [i, 0, 0])));
    const [, second, third, fourth] = written;
    const since = async (query: string) =>
      (await page(owner.access_token, w.id, query)).items.map((item) => item.revision);

    expect(await since(`since=${second}`)).toEqual([fourth, third]);
    expect(await since(`since=${fourth}`)).toEqual([]);
    expect(await since('since=0')).toEqual([...written].reverse());
  });

  it.each([
    ['not base64 JSON', 'cursor=%25%25%25'],
    ['a key of another list', `cursor=${Buffer.from('["a","b"]').toString('base64url')}`],
    ['not a positive id', `cursor=${Buffer.from('[-4]').toString('base64url')}`],
  ])('refuses a cursor that is %s (422 naming cursor)', async (_case, query) => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const response = await history(owner.access_token, w.id, query);
    expect(response.statusCode).toBe(422);
    expect(response.json().errors).toEqual([expect.objectContaining({ path: 'cursor' })]);
  });

  it.each([
    ['x alone', 'x=1', ['y', 'z']],
    ['x and z', 'x=1&z=2', ['y']],
    ['coordinates without room_id', 'x=1&y=2&z=3', ['room_id']],
  ])('refuses a chunk named by %s (422 naming what is missing)', async (_case, query, missing) => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    const withRoom = missing.includes('room_id') ? query : `${query}&room_id=${w.main}`;
    const response = await history(owner.access_token, w.id, withRoom);
    expect(response.statusCode).toBe(422);
    expect(response.json().errors.map((e: { path: string }) => e.path)).toEqual(missing);
  });

  it('refuses a since that is not a revision id (422)', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token);
    expect((await history(owner.access_token, w.id, 'since=-1')).statusCode).toBe(422);
    expect((await history(owner.access_token, w.id, 'since=abc')).statusCode).toBe(422);
  });

  it('hides another user’s private world (404) and shows a public one’s history to other users', async () => {
    const owner = await registerUser(app());
    const other = await registerUser(app());
    const hidden = await world(owner.access_token, 'private');
    const open = await world(owner.access_token, 'public');
    await write(owner.access_token, chunkUrl(hidden.id, hidden.main, [0, 0, 0]));
    const revision = await write(owner.access_token, chunkUrl(open.id, open.main, [0, 0, 0]));

    const refused = await history(other.access_token, hidden.id);
    expect(refused.statusCode).toBe(404);
    expect(refused.json().code).toBe('NOT_FOUND');
    expect((await page(other.access_token, open.id)).items.map((item) => item.revision)).toEqual([revision]);
  });

  it('answers 401 without a token', async () => {
    const owner = await registerUser(app());
    const w = await world(owner.access_token, 'public');
    expect((await history(undefined, w.id)).statusCode).toBe(401);
  });

  it('shows null as the author of revisions whose author deleted their account', async () => {
    const author = await registerUser(app());
    const heir = await registerUser(app());
    const w = await world(author.access_token, 'public');
    const revision = await write(author.access_token, chunkUrl(w.id, w.main, [0, 0, 0]));
    // Only owners write today and an account takes its worlds along, so the world changes hands
    // in SQL: the revisions then outlive their author, as they will once others can edit a world.
    await queryRows(app().db, 'update worlds set owner_id = ? where id = ?', [heir.user.id, w.id]);
    const deleted = await call('DELETE', '/api/users/me', author.access_token, { password: PASSWORD });
    expect(deleted.statusCode, deleted.body).toBe(204);

    const { items } = await page(heir.access_token, w.id);
    expect(items).toEqual([expect.objectContaining({ revision, author_id: null })]);
  });
});
