import { describe, expect, it, vi } from 'vitest';
import type { Profile } from '../../protocol/profiles.js';
import { DEFAULT_PRIVACY, privacyOf } from '../../src/modules/profiles/profiles.repository.js';
import type { StatementPool } from '../../src/platform/data-access.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

const defaults = {
  bio: '',
  avatar_asset_id: null,
  privacy: {
    profile_visibility: 'public',
    presence_visibility: 'everyone',
    dm_policy: 'everyone',
    favorites_visibility: 'public',
  },
  updated_at: null,
};

describe('profile', () => {
  const app = useTestApp();

  const sql = (query: string, params: unknown[] = []) => queryRows(app().db, query, params);
  /** The stored row as text columns, or undefined when there is none. */
  const row = async (userId: string) =>
    (
      await sql(
        `select bio, avatar_asset_id, profile_visibility::text, presence_visibility::text, dm_policy::text,
                favorites_visibility::text, updated_at::text
         from profiles where user_id = ?`,
        [userId],
      )
    )[0];
  const rowCount = async (userId: string) =>
    (await sql('select count(*)::int as n from profiles where user_id = ?', [userId]))[0]?.n;

  const get = (token: string) =>
    app().http.inject({ method: 'GET', url: '/api/profile/me', headers: bearer(token) });
  const put = (token: string, payload: unknown) =>
    app().http.inject({
      method: 'PUT',
      url: '/api/profile/me',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: JSON.stringify(payload),
    });

  it('returns the default profile to a user who never saved one, without creating a row', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await get(access_token);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ user_id: user.id, ...defaults });
    expect(await rowCount(user.id)).toBe(0);
  });

  it('saves only the fields a PUT names and keeps the others as they were', async () => {
    const { user, access_token } = await registerUser(app());
    const first = await put(access_token, { bio: 'Builder of floating gardens.' });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({
      user_id: user.id,
      bio: 'Builder of floating gardens.',
      avatar_asset_id: null,
      privacy: defaults.privacy,
    });

    const second = await put(access_token, { privacy: { dm_policy: 'friends' } });
    expect(second.statusCode).toBe(200);
    const expected = {
      user_id: user.id,
      bio: 'Builder of floating gardens.',
      avatar_asset_id: null,
      privacy: { ...defaults.privacy, dm_policy: 'friends' },
    };
    expect(second.json()).toMatchObject(expected);
    expect((await get(access_token)).json()).toMatchObject(expected);
    expect(await row(user.id)).toMatchObject({ bio: 'Builder of floating gardens.', dm_policy: 'friends' });
    expect(await rowCount(user.id)).toBe(1);
  });

  it('sets every privacy setting at once and reads them back', async () => {
    const { access_token } = await registerUser(app());
    const privacy = {
      profile_visibility: 'private',
      presence_visibility: 'nobody',
      dm_policy: 'nobody',
      favorites_visibility: 'friends',
    };
    expect((await put(access_token, { privacy })).json()).toMatchObject({ privacy });
    expect((await get(access_token)).json()).toMatchObject({ privacy });
  });

  it('sets avatar_asset_id and clears it again with null, leaving the bio alone', async () => {
    const { user, access_token } = await registerUser(app());
    await put(access_token, { bio: 'hello' });
    const set = await put(access_token, { avatar_asset_id: 'asset_portrait_07' });
    expect(set.json()).toMatchObject({ bio: 'hello', avatar_asset_id: 'asset_portrait_07' });
    expect(await row(user.id)).toMatchObject({ avatar_asset_id: 'asset_portrait_07' });

    const cleared = await put(access_token, { avatar_asset_id: null });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toMatchObject({ bio: 'hello', avatar_asset_id: null });
    expect(await row(user.id)).toMatchObject({ bio: 'hello', avatar_asset_id: null });
  });

  it('sets updated_at on every write', async () => {
    const { access_token } = await registerUser(app());
    const before = Date.now();
    const first = (await put(access_token, { bio: 'one' })).json() as Profile;
    expect(first.updated_at).not.toBeNull();
    const firstAt = Date.parse(first.updated_at ?? '');
    expect(firstAt).toBeGreaterThanOrEqual(before);
    expect(firstAt).toBeLessThanOrEqual(Date.now());
    expect(((await get(access_token)).json() as Profile).updated_at).toBe(first.updated_at);

    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = (await put(access_token, { bio: 'two' })).json() as Profile;
    expect(Date.parse(second.updated_at ?? '')).toBeGreaterThan(firstAt);
  });

  it('answers an empty object with the current profile and writes nothing', async () => {
    const { user, access_token } = await registerUser(app());
    const fresh = await put(access_token, {});
    expect(fresh.statusCode).toBe(200);
    expect(fresh.json()).toEqual({ user_id: user.id, ...defaults });
    expect(await rowCount(user.id)).toBe(0);

    const saved = (await put(access_token, { bio: 'kept' })).json();
    const again = await put(access_token, {});
    expect(again.json()).toEqual(saved);
  });

  it('counts the bio in characters, so 500 emoji fit and the 501st does not', async () => {
    const { access_token } = await registerUser(app());
    const fits = await put(access_token, { bio: '🌱'.repeat(500) });
    expect(fits.statusCode).toBe(200);
    expect(fits.json()).toMatchObject({ bio: '🌱'.repeat(500) });
    expect((await put(access_token, { bio: '🌱'.repeat(501) })).statusCode).toBe(422);
  });

  it.each([
    ['a bio of 501 characters', { bio: 'x'.repeat(501) }, 'body.bio'],
    ['a bio that is a number', { bio: 5 }, 'body.bio'],
    ['a null bio', { bio: null }, 'body.bio'],
    ['a bio holding U+0000', { bio: 'nul\u0000byte' }, 'body.bio'],
    ['a bio holding an unpaired surrogate', { bio: 'half \ud83c' }, 'body.bio'],
    ['an unknown top-level key', { bio: 'ok', nickname: 'x' }, 'body'],
    ['an unknown privacy key', { privacy: { dm_policy: 'friends', show_email: 'nobody' } }, 'body.privacy'],
    [
      'an unknown privacy value',
      { privacy: { presence_visibility: 'friends-of-friends' } },
      'body.privacy.presence_visibility',
    ],
    [
      'a privacy value of the other enumeration',
      { privacy: { dm_policy: 'public' } },
      'body.privacy.dm_policy',
    ],
    ['privacy that is a string', { privacy: 'public' }, 'body.privacy'],
    ['privacy that is null', { privacy: null }, 'body.privacy'],
    ['an avatar_asset_id of 65 characters', { avatar_asset_id: 'a'.repeat(65) }, 'body.avatar_asset_id'],
    ['an empty avatar_asset_id', { avatar_asset_id: '' }, 'body.avatar_asset_id'],
    ['an avatar_asset_id that is a number', { avatar_asset_id: 7 }, 'body.avatar_asset_id'],
    ['a body that is an array', [{ bio: 'x' }], 'body'],
  ])('refuses %s with 422 VALIDATION_FAILED and writes nothing', async (_name, payload, path) => {
    const { user, access_token } = await registerUser(app());
    const first = await put(access_token, payload);
    expect(first.statusCode).toBe(422);
    expect(first.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(first.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(first.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await rowCount(user.id)).toBe(0);

    await put(access_token, { bio: 'stored', avatar_asset_id: 'asset_1', privacy: { dm_policy: 'friends' } });
    const stored = await row(user.id);
    const second = await put(access_token, payload);
    expect(second.statusCode).toBe(422);
    expect(await row(user.id)).toEqual(stored);
  });

  it.each(['GET', 'PUT'] as const)(
    'answers %s without a valid token with 401 UNAUTHENTICATED',
    async (method) => {
      for (const headers of [{}, { authorization: 'Bearer not.a.token' }]) {
        const response = await app().http.inject({
          method,
          url: '/api/profile/me',
          headers,
          ...(method === 'PUT' ? { payload: { bio: 'x' } } : {}),
        });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
      }
    },
  );

  it('shows each user only their own profile', async () => {
    const alice = await registerUser(app());
    const bob = await registerUser(app());
    await put(alice.access_token, { bio: "alice's bio", privacy: { profile_visibility: 'private' } });
    const bobs = await get(bob.access_token);
    expect(bobs.json()).toEqual({ user_id: bob.user.id, ...defaults });
    const alices = await get(alice.access_token);
    expect(alices.json()).toMatchObject({ user_id: alice.user.id, bio: "alice's bio" });
  });

  it('lets concurrent first writes of different fields all succeed on one row holding every change', async () => {
    const { user, access_token } = await registerUser(app());
    const patches = [
      { bio: 'concurrent' },
      { avatar_asset_id: 'asset_c' },
      { privacy: { profile_visibility: 'friends' } },
      { privacy: { presence_visibility: 'friends' } },
      { privacy: { dm_policy: 'nobody' } },
      { privacy: { favorites_visibility: 'private' } },
    ];
    const responses = await Promise.all(patches.map((patch) => put(access_token, patch)));
    expect(responses.map((r) => r.statusCode)).toEqual(patches.map(() => 200));
    expect(await rowCount(user.id)).toBe(1);
    expect((await get(access_token)).json()).toMatchObject({
      bio: 'concurrent',
      avatar_asset_id: 'asset_c',
      privacy: {
        profile_visibility: 'friends',
        presence_visibility: 'friends',
        dm_policy: 'nobody',
        favorites_visibility: 'private',
      },
    });
  });

  it('lets two concurrent identical first writes both succeed on one row', async () => {
    const { user, access_token } = await registerUser(app());
    const [a, b] = await Promise.all([
      put(access_token, { bio: 'same' }),
      put(access_token, { bio: 'same' }),
    ]);
    expect([a?.statusCode, b?.statusCode]).toEqual([200, 200]);
    expect(await rowCount(user.id)).toBe(1);
  });

  it('reports stored privacy settings and defaults for a batch of users in one query', async () => {
    const saved = await registerUser(app());
    const neverSaved = await registerUser(app());
    await put(saved.access_token, { privacy: { presence_visibility: 'nobody', dm_policy: 'friends' } });
    const unknownId = '01a1ffb2-0000-7000-8000-000000000000';

    // Every statement of the lean path (executeBound) goes through the root handle's pool.run;
    // only those reading profiles count, as the app's periodic passes run statements meanwhile.
    const { pool } = app().db.data as unknown as { pool: StatementPool };
    const run = vi.spyOn(pool, 'run');
    const profileReads = () => run.mock.calls.filter(([, sql]) => /\bfrom profiles\b/.test(sql)).length;
    try {
      const result = await privacyOf(app().db.data, [
        saved.user.id,
        neverSaved.user.id,
        unknownId,
        'not-a-uuid',
        saved.user.id,
      ]);
      expect(profileReads()).toBe(1);
      expect(result).toEqual(
        new Map([
          [saved.user.id, { ...DEFAULT_PRIVACY, presence_visibility: 'nobody', dm_policy: 'friends' }],
          [neverSaved.user.id, DEFAULT_PRIVACY],
          [unknownId, DEFAULT_PRIVACY],
          ['not-a-uuid', DEFAULT_PRIVACY],
        ]),
      );
    } finally {
      run.mockRestore();
    }
    expect(await privacyOf(app().db.data, [])).toEqual(new Map());
    expect(DEFAULT_PRIVACY).toEqual(defaults.privacy);
  });

  it('removes the profile with the account', async () => {
    const { user, access_token } = await registerUser(app());
    await put(access_token, { bio: 'soon gone' });
    expect(await rowCount(user.id)).toBe(1);
    const response = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(access_token),
      payload: { password: PASSWORD },
    });
    expect(response.statusCode).toBe(204);
    expect(await rowCount(user.id)).toBe(0);
  });
});
