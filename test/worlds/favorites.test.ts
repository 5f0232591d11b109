import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_FAVORITES } from '../../protocol/favorites.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

const URL = '/api/profile/me/favorites';

describe('profile favorites', () => {
  const app = useTestApp();

  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    token: string,
    payload?: unknown,
  ) =>
    app().http.inject({
      method,
      url,
      headers: { ...bearer(token), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined
        ? {}
        : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
    });
  const put = (token: string, payload: unknown) => call('PUT', URL, token, payload);
  const favorites = async (token: string) => {
    const response = await call('GET', URL, token);
    expect(response.statusCode, response.body).toBe(200);
    return response.json().world_ids as string[];
  };
  /** What is stored, hidden entries included, in the order GET reads it. */
  const stored = async (userId: string) =>
    (
      await queryRows<{ world_id: string }>(
        app().db,
        'select world_id from profile_favorites where user_id = ? order by created_at, world_id',
        [userId],
      )
    ).map((row) => row.world_id);

  async function world(token: string, visibility: 'public' | 'unlisted' | 'private' = 'private') {
    const response = await call('POST', '/api/worlds', token, { name: 'Harbor', visibility });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().id as string;
  }

  it('answers an empty list for a user who never favorited a world', async () => {
    const user = await registerUser(app());
    expect(await favorites(user.access_token)).toEqual([]);
  });

  it('replaces the whole set with a PUT and answers it, and GET reads it back in PUT order', async () => {
    const user = await registerUser(app());
    const [a, b, c] = [
      await world(user.access_token),
      await world(user.access_token),
      await world(user.access_token),
    ];
    expect((await put(user.access_token, { world_ids: [a, b] })).json()).toEqual({ world_ids: [a, b] });

    const response = await put(user.access_token, { world_ids: [c, a] });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ world_ids: [c, a] });
    expect(await favorites(user.access_token)).toEqual([c, a]);
    expect(await stored(user.user.id)).toEqual([c, a]);

    expect((await put(user.access_token, { world_ids: [] })).json()).toEqual({ world_ids: [] });
    expect(await stored(user.user.id)).toEqual([]);
  });

  it('collapses duplicates, keeping the place of the first, including an id sent in upper case', async () => {
    const user = await registerUser(app());
    const [a, b] = [await world(user.access_token), await world(user.access_token)];
    const response = await put(user.access_token, { world_ids: [b, a, b, a.toUpperCase(), b] });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().world_ids).toEqual([b, a]);
    expect(await favorites(user.access_token)).toEqual([b, a]);
  });

  it(`accepts ${MAX_FAVORITES} ids and keeps their order`, async () => {
    const user = await registerUser(app());
    const ids = Array.from({ length: MAX_FAVORITES }, () => randomUUID());
    await queryRows(app().db, `insert into worlds (id, owner_id, name) select unnest(?::uuid[]), ?, 'bulk'`, [
      `{${ids.join(',')}}`,
      user.user.id,
    ]);
    const reversed = [...ids].reverse();
    expect((await put(user.access_token, { world_ids: reversed })).statusCode).toBe(200);
    expect(await favorites(user.access_token)).toEqual(reversed);
  });

  it(`refuses ${MAX_FAVORITES + 1} ids as sent, duplicates counted (422), and keeps the previous set`, async () => {
    const user = await registerUser(app());
    const a = await world(user.access_token);
    await put(user.access_token, { world_ids: [a] });
    const response = await put(user.access_token, { world_ids: Array(MAX_FAVORITES + 1).fill(a) });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'body.world_ids' }],
    });
    expect(await stored(user.user.id)).toEqual([a]);
  });

  it('refuses an id naming no world (422 naming each place it was sent), writes nothing and keeps the previous set', async () => {
    const user = await registerUser(app());
    const [a, b] = [await world(user.access_token), await world(user.access_token)];
    await put(user.access_token, { world_ids: [a] });
    const unknown = randomUUID();
    const response = await put(user.access_token, { world_ids: [b, unknown, a, unknown] });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [
        { path: 'body.world_ids.1', message: 'names no world' },
        { path: 'body.world_ids.3', message: 'names no world' },
      ],
    });
    expect(await stored(user.user.id)).toEqual([a]);
  });

  it("answers another user's private world exactly like an unknown id (422), so its existence stays hidden", async () => {
    const owner = await registerUser(app());
    const user = await registerUser(app());
    const hidden = await world(owner.access_token, 'private');
    const asHidden = await put(user.access_token, { world_ids: [hidden] });
    const asUnknown = await put(user.access_token, { world_ids: [randomUUID()] });
    expect(asHidden.statusCode).toBe(422);
    expect(asHidden.json()).toEqual(asUnknown.json());
    expect(await stored(user.user.id)).toEqual([]);
  });

  it("accepts other users' public and unlisted worlds and the caller's own private ones", async () => {
    const owner = await registerUser(app());
    const user = await registerUser(app());
    const ids = [
      await world(owner.access_token, 'public'),
      await world(owner.access_token, 'unlisted'),
      await world(user.access_token, 'private'),
    ];
    expect((await put(user.access_token, { world_ids: ids })).statusCode).toBe(200);
    expect(await favorites(user.access_token)).toEqual(ids);
  });

  it.each([
    ['an id that is not a uuid', { world_ids: ['not-a-uuid'] }, 'body.world_ids.0'],
    ['a NUL in an id', { world_ids: ['0195f2d0-0000-7000-8000-00000000000\u0000'] }, 'body.world_ids.0'],
    ['an id over 64 characters', { world_ids: ['x'.repeat(65)] }, 'body.world_ids.0'],
    ['a number instead of an id', { world_ids: [42] }, 'body.world_ids.0'],
    ['null instead of an id', { world_ids: [null] }, 'body.world_ids.0'],
    ['a string instead of a list', { world_ids: 'all' }, 'body.world_ids'],
    ['an object instead of a list', { world_ids: { 0: 'x' } }, 'body.world_ids'],
    ['no world_ids', {}, 'body.world_ids'],
    ['an unknown field', { world_ids: [], user_id: 'someone' }, 'body'],
  ])('refuses a body with %s (422) and writes nothing', async (_case, body, path) => {
    const user = await registerUser(app());
    const a = await world(user.access_token);
    await put(user.access_token, { world_ids: [a] });
    const response = await put(user.access_token, body);
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().code).toBe('VALIDATION_FAILED');
    expect(response.json().errors.map((error: { path: string }) => error.path)).toContain(path);
    expect(await stored(user.user.id)).toEqual([a]);
  });

  it.each([
    ['__proto__', 422, '{"world_ids": [], "__proto__": {"world_ids": ["x"]}}'],
    // Fastify's JSON parser refuses constructor.prototype itself, before any schema sees it.
    ['constructor.prototype', 400, '{"world_ids": [], "constructor": {"prototype": {"polluted": true}}}'],
  ])(
    'refuses a %s key in the body (%i), never a server error, and pollutes nothing',
    async (_key, status, raw) => {
      const user = await registerUser(app());
      const response = await put(user.access_token, raw);
      expect(response.statusCode, response.body).toBe(status);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(await stored(user.user.id)).toEqual([]);
    },
  );

  it('drops a favorite when its world is deleted', async () => {
    const user = await registerUser(app());
    const [a, b] = [await world(user.access_token), await world(user.access_token)];
    await put(user.access_token, { world_ids: [a, b] });
    expect((await call('DELETE', `/api/worlds/${a}`, user.access_token)).statusCode).toBe(204);
    expect(await favorites(user.access_token)).toEqual([b]);
    expect(await stored(user.user.id)).toEqual([b]);
  });

  it('leaves out a world its owner made private, keeps the entry, and shows it again once readable', async () => {
    const owner = await registerUser(app());
    const user = await registerUser(app());
    const [a, b] = [await world(owner.access_token, 'public'), await world(owner.access_token, 'public')];
    await put(user.access_token, { world_ids: [a, b] });
    const visibility = (value: string) =>
      call('PATCH', `/api/worlds/${a}`, owner.access_token, { visibility: value });

    expect((await visibility('private')).statusCode).toBe(200);
    expect(await favorites(user.access_token)).toEqual([b]);
    expect(await stored(user.user.id)).toEqual([a, b]);
    expect((await put(user.access_token, { world_ids: [a] })).statusCode).toBe(422);

    expect((await visibility('unlisted')).statusCode).toBe(200);
    expect(await favorites(user.access_token)).toEqual([a, b]);
  });

  it("drops a user's favorites with their account, and other users' favorites of their deleted worlds", async () => {
    const owner = await registerUser(app());
    const user = await registerUser(app());
    const shared = await world(owner.access_token, 'public');
    await put(owner.access_token, { world_ids: [shared] });
    await put(user.access_token, { world_ids: [shared] });
    const deleted = await call('DELETE', '/api/users/me', owner.access_token, { password: PASSWORD });
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(await stored(owner.user.id)).toEqual([]);
    expect(await stored(user.user.id)).toEqual([]);
  });

  it('ends replaces sent at once with one of their sets, never a mix', async () => {
    const user = await registerUser(app());
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await world(user.access_token));
    // Overlapping sets: merged writes would collide on the primary key or leave a union.
    const sets = Array.from({ length: 8 }, (_, i) => [ids[i % 6], ids[(i + 1) % 6], ids[(i + 2) % 6]]);
    const answers = await Promise.all(sets.map((set) => put(user.access_token, { world_ids: set })));
    expect(answers.map((answer) => answer.statusCode)).toEqual(sets.map(() => 200));
    expect(sets).toContainEqual(await stored(user.user.id));
  });

  it('needs a signed-in user for both operations (401)', async () => {
    expect((await app().http.inject({ method: 'GET', url: URL })).statusCode).toBe(401);
    expect(
      (await app().http.inject({ method: 'PUT', url: URL, payload: { world_ids: [] } })).statusCode,
    ).toBe(401);
  });
});
