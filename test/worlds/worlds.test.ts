import { describe, expect, it } from 'vitest';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

describe('worlds and rooms', () => {
  const app = useTestApp();
  const sql = <Row = Record<string, unknown>>(query: string, params: unknown[] = []) =>
    queryRows<Row>(app().db, query, params);
  const count = async (query: string, params: unknown[]) =>
    Number((await sql<{ n: string }>(`select count(*)::text as n from ${query}`, params))[0]?.n);

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) =>
    app().http.inject({
      method,
      url,
      headers: { ...bearer(token), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });

  async function world(token: string, body: Record<string, unknown> = { name: 'Harbor' }) {
    const response = await call('POST', '/api/worlds', token, body);
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; rooms: { id: string; name: string }[] };
  }

  it('creates a private world with its room main and content revision 0', async () => {
    const owner = await registerUser(app());
    const response = await call('POST', '/api/worlds', owner.access_token, {
      name: 'Harbor',
      description: 'Docks',
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({
      owner_id: owner.user.id,
      name: 'Harbor',
      description: 'Docks',
      visibility: 'private',
      content_revision: 0,
      rooms: [{ name: 'main' }],
    });
    expect(await count('rooms where world_id = ?', [body.id])).toBe(1);
  });

  it.each([
    ['an empty name', { name: '' }, 'body.name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'body.name'],
    ['a NUL in the name', { name: 'a\u0000b' }, 'body.name'],
    ['an unknown visibility', { name: 'x', visibility: 'friends' }, 'body.visibility'],
    ['an unknown field', { name: 'x', owner_id: 'someone' }, ''],
  ])('refuses a world with %s (422) and writes nothing', async (_case, body, path) => {
    const owner = await registerUser(app());
    const response = await call('POST', '/api/worlds', owner.access_token, body);
    expect(response.statusCode).toBe(422);
    expect(response.json().code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(response.json().errors)).toContain(`"path":"${path}`);
    expect(await count('worlds where owner_id = ?', [owner.user.id])).toBe(0);
  });

  it('shows public and unlisted worlds to every signed-in user and hides private ones as 404', async () => {
    const owner = await registerUser(app());
    const other = await registerUser(app());
    for (const visibility of ['public', 'unlisted'] as const) {
      const { id } = await world(owner.access_token, { name: visibility, visibility });
      expect((await call('GET', `/api/worlds/${id}`, other.access_token)).statusCode).toBe(200);
    }
    const hidden = await world(owner.access_token, { name: 'secret' });
    const asOther = await call('GET', `/api/worlds/${hidden.id}`, other.access_token);
    expect(asOther.statusCode).toBe(404);
    expect(asOther.json().code).toBe('NOT_FOUND');
    expect((await call('GET', `/api/worlds/${hidden.id}/rooms`, other.access_token)).statusCode).toBe(404);
    expect(
      (await call('GET', `/api/worlds/${hidden.id}/rooms/${hidden.rooms[0]?.id}`, other.access_token))
        .statusCode,
    ).toBe(404);
    expect((await call('GET', `/api/worlds/${hidden.id}`, owner.access_token)).statusCode).toBe(200);
  });

  it('answers 404 for a world id that is not an id or names no world', async () => {
    const user = await registerUser(app());
    for (const id of ['not-a-uuid', '0195f2d0-0000-7000-8000-000000000000'])
      expect((await call('GET', `/api/worlds/${id}`, user.access_token)).statusCode).toBe(404);
  });

  it('lets only the owner change or delete a world: 403 for readers, 404 for those who cannot read it', async () => {
    const owner = await registerUser(app());
    const other = await registerUser(app());
    const open = await world(owner.access_token, { name: 'Open', visibility: 'public' });
    const closed = await world(owner.access_token, { name: 'Closed' });

    const patch = await call('PATCH', `/api/worlds/${open.id}`, other.access_token, { name: 'Mine now' });
    expect(patch.statusCode).toBe(403);
    expect(patch.json().code).toBe('FORBIDDEN');
    expect((await call('DELETE', `/api/worlds/${open.id}`, other.access_token)).statusCode).toBe(403);
    expect(
      (await call('PATCH', `/api/worlds/${closed.id}`, other.access_token, { name: 'x' })).statusCode,
    ).toBe(404);
    expect(
      (await call('POST', `/api/worlds/${open.id}/rooms`, other.access_token, { name: 'x' })).statusCode,
    ).toBe(403);
    expect(await sql('select name from worlds where id = ?', [open.id])).toEqual([{ name: 'Open' }]);
    expect(await count('rooms where world_id = ?', [open.id])).toBe(1);
  });

  it('updates only the fields a PATCH names', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token, { name: 'Harbor', description: 'Docks' });
    const response = await call('PATCH', `/api/worlds/${id}`, owner.access_token, { visibility: 'public' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ name: 'Harbor', description: 'Docks', visibility: 'public' });
  });

  it('deletes a world with its rooms (204)', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    expect((await call('DELETE', `/api/worlds/${id}`, owner.access_token)).statusCode).toBe(204);
    expect((await call('GET', `/api/worlds/${id}`, owner.access_token)).statusCode).toBe(404);
    expect(await count('rooms where world_id = ?', [id])).toBe(0);
  });

  it('adds rooms with names unique per world regardless of case (409 otherwise)', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    const lobby = await call('POST', `/api/worlds/${id}/rooms`, owner.access_token, { name: 'Lobby' });
    expect(lobby.statusCode).toBe(201);
    expect(lobby.json()).toMatchObject({ world_id: id, name: 'Lobby' });
    const again = await call('POST', `/api/worlds/${id}/rooms`, owner.access_token, { name: 'LOBBY' });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('CONFLICT');
    expect(await count('rooms where world_id = ?', [id])).toBe(2);
  });

  it('refuses room 101 of a world with 409 QUOTA_EXCEEDED and the limit (MAX_ROOMS_PER_WORLD, default 100), adding none', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    await sql(
      `insert into rooms (id, world_id, name) select gen_random_uuid(), ?, 'r' || n from generate_series(2, 100) n`,
      [id],
    );
    const response = await call('POST', `/api/worlds/${id}/rooms`, owner.access_token, {
      name: 'one too many',
    });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 100 });
    expect(await count('rooms where world_id = ?', [id])).toBe(100);
  });

  it('keeps the room main: it can be neither renamed nor deleted (409)', async () => {
    const owner = await registerUser(app());
    const { id, rooms } = await world(owner.access_token);
    const main = rooms[0]?.id;
    expect(
      (await call('PATCH', `/api/worlds/${id}/rooms/${main}`, owner.access_token, { name: 'hall' }))
        .statusCode,
    ).toBe(409);
    expect((await call('DELETE', `/api/worlds/${id}/rooms/${main}`, owner.access_token)).statusCode).toBe(
      409,
    );
    expect(await sql('select name from rooms where world_id = ?', [id])).toEqual([{ name: 'main' }]);
  });

  it('renames and deletes other rooms', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    const hall = (await call('POST', `/api/worlds/${id}/rooms`, owner.access_token, { name: 'hall' })).json();
    const renamed = await call('PATCH', `/api/worlds/${id}/rooms/${hall.id}`, owner.access_token, {
      name: 'great hall',
    });
    expect(renamed.json()).toMatchObject({ id: hall.id, name: 'great hall' });
    expect((await call('DELETE', `/api/worlds/${id}/rooms/${hall.id}`, owner.access_token)).statusCode).toBe(
      204,
    );
    expect((await call('GET', `/api/worlds/${id}/rooms/${hall.id}`, owner.access_token)).statusCode).toBe(
      404,
    );
  });

  it('answers 404 for a room of another world', async () => {
    const owner = await registerUser(app());
    const a = await world(owner.access_token);
    const b = await world(owner.access_token);
    expect(
      (await call('GET', `/api/worlds/${a.id}/rooms/${b.rooms[0]?.id}`, owner.access_token)).statusCode,
    ).toBe(404);
  });

  it('pages rooms in creation order without gaps or duplicates', async () => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    for (const name of ['a', 'b', 'c', 'd'])
      await call('POST', `/api/worlds/${id}/rooms`, owner.access_token, { name });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await call('GET', `/api/worlds/${id}/rooms?${query}`, owner.access_token)).json();
      seen.push(...page.items.map((room: { name: string }) => room.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['main', 'a', 'b', 'c', 'd']);
  });

  it.each([
    ['a limit of 0', 'limit=0', 'querystring.limit'],
    ['a limit over 100', 'limit=101', 'querystring.limit'],
    ['a cursor it never gave out', 'cursor=bm90LWEta2V5', 'cursor'],
  ])('refuses a room list with %s (422)', async (_case, query, path) => {
    const owner = await registerUser(app());
    const { id } = await world(owner.access_token);
    const response = await call('GET', `/api/worlds/${id}/rooms?${query}`, owner.access_token);
    expect(response.statusCode).toBe(422);
    expect(JSON.stringify(response.json().errors)).toContain(`"path":"${path}`);
  });

  it('needs a signed-in user for every world route (401)', async () => {
    const response = await app().http.inject({ method: 'POST', url: '/api/worlds', payload: { name: 'x' } });
    expect(response.statusCode).toBe(401);
  });

  it("sets the world's content revision to the largest revision left when a room is deleted", async () => {
    const owner = await registerUser(app());
    const created = await world(owner.access_token);
    const main = created.rooms[0]?.id as string;
    const hall = (
      await call('POST', `/api/worlds/${created.id}/rooms`, owner.access_token, { name: 'hall' })
    ).json().id as string;
    const put = (room: string) =>
      app().http.inject({
        method: 'PUT',
        url: `/api/worlds/${created.id}/rooms/${room}/chunks/0/0/0`,
        headers: {
          ...bearer(owner.access_token),
          'content-type': 'application/octet-stream',
          'if-none-match': '*',
        },
        payload: Buffer.from(encodeChunk({ objects: [] })),
      });
    const kept = (await put(main)).json().revision as number;
    const dropped = (await put(hall)).json().revision as number;
    expect((await call('GET', `/api/worlds/${created.id}`, owner.access_token)).json().content_revision).toBe(
      dropped,
    );

    expect(
      (await call('DELETE', `/api/worlds/${created.id}/rooms/${hall}`, owner.access_token)).statusCode,
    ).toBe(204);
    expect((await call('GET', `/api/worlds/${created.id}`, owner.access_token)).json().content_revision).toBe(
      kept,
    );
    expect(await count('chunk_revisions where room_id = ?', [hall])).toBe(0);
  });
});
