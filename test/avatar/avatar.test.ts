import { describe, expect, it } from 'vitest';
import { AVATAR_LOADOUT_MAX_BYTES } from '../../protocol/profiles.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** A valid document whose JSON is exactly `size` bytes, padded with `unit` (1 or 2 UTF-8 bytes). */
function documentOfSize(size: number, unit: 'x' | 'é' = 'x') {
  const empty = { base_body: 'base_human_female_02', slots: { hat: 'cap_01' }, padding: '' };
  const room = size - bytes(empty);
  const unitBytes = Buffer.byteLength(unit, 'utf8');
  const padding = unit.repeat(Math.floor(room / unitBytes)) + 'x'.repeat(room % unitBytes);
  const document = { ...empty, padding };
  if (bytes(document) !== size) throw new Error(`built ${bytes(document)} bytes instead of ${size}`);
  return document;
}

describe('avatar loadout', () => {
  const app = useTestApp();

  const sql = (query: string, params: unknown[] = []) => queryRows(app().db, query, params);
  const storedDocument = async (userId: string) =>
    (await sql('select document from avatar_loadouts where user_id = ?', [userId]))[0]?.document;
  const rowCount = async (userId: string) =>
    (await sql('select count(*)::int as n from avatar_loadouts where user_id = ?', [userId]))[0]?.n;

  const get = (token: string) =>
    app().http.inject({ method: 'GET', url: '/api/avatar/loadout', headers: bearer(token) });
  /** Sends the body as raw JSON text, so arrays, strings and null arrive exactly as a client sends them. */
  const put = (token: string, body: unknown) =>
    app().http.inject({
      method: 'PUT',
      url: '/api/avatar/loadout',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  it('returns the default loadout to a user who never saved one, without creating a row', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await get(access_token);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ base_body: 'base_human_male_01', slots: {}, is_default: true });
    expect(await rowCount(user.id)).toBe(0);
  });

  it('saves a document and returns it with is_default false, keeping unknown keys unchanged', async () => {
    const { user, access_token } = await registerUser(app());
    const document = {
      base_body: 'base_human_female_02',
      slots: { head: 'hat_wizard_03', torso: { item: 'coat_07', tint: [0.25, 0.5, 1] } },
      version: 3,
      scale: 1.0625,
      tiny: 1e-7,
      negative: -42,
      big: 9007199254740991,
      flags: [true, false, null],
      nested: { a: { b: { c: [1, { d: 'deep' }] } }, empty: {}, none: [] },
      name: 'Zoë 🌸 鬼 — نص',
      combining: 'e\u0301',
      blank: '',
      nothing: null,
    };
    const saved = await put(access_token, document);
    expect(saved.statusCode).toBe(200);
    expect(saved.json()).toEqual({ ...document, is_default: false });

    const read = await get(access_token);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ ...document, is_default: false });
    expect(await storedDocument(user.id)).toEqual(document);
  });

  it('does not check slot contents', async () => {
    const { access_token } = await registerUser(app());
    const slots = {
      head: 42,
      feet: null,
      hands: ['glove_l', 'glove_r'],
      back: { wings: { span: 3.5, glow: true } },
      '': 'a slot with an empty name',
      'any slot name at all': 'item_that_fits_nowhere',
    };
    const response = await put(access_token, { base_body: 'base_robot_01', slots });
    expect(response.statusCode).toBe(200);
    expect((await get(access_token)).json()).toEqual({
      base_body: 'base_robot_01',
      slots,
      is_default: false,
    });
  });

  it('ignores an is_default the client sends and never stores it', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await put(access_token, { base_body: 'base_x', slots: {}, is_default: true });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ base_body: 'base_x', slots: {}, is_default: false });
    expect((await get(access_token)).json()).toEqual({ base_body: 'base_x', slots: {}, is_default: false });
    expect(await storedDocument(user.id)).toEqual({ base_body: 'base_x', slots: {} });
  });

  it('replaces the whole document on every save', async () => {
    const { user, access_token } = await registerUser(app());
    await put(access_token, { base_body: 'first', slots: { head: 'h1' }, extra: 'old' });
    await put(access_token, { base_body: 'second', slots: { feet: 'f2' } });
    expect((await get(access_token)).json()).toEqual({
      base_body: 'second',
      slots: { feet: 'f2' },
      is_default: false,
    });
    expect(await rowCount(user.id)).toBe(1);
  });

  it.each([
    ['a missing base_body', { slots: {} }, 'body.base_body'],
    ['an empty base_body', { base_body: '', slots: {} }, 'body.base_body'],
    ['a base_body that is not a string', { base_body: 7, slots: {} }, 'body.base_body'],
    ['a null base_body', { base_body: null, slots: {} }, 'body.base_body'],
    ['missing slots', { base_body: 'b' }, 'body.slots'],
    ['slots that are an array', { base_body: 'b', slots: ['hat'] }, 'body.slots'],
    ['slots that are null', { base_body: 'b', slots: null }, 'body.slots'],
    ['slots that are a string', { base_body: 'b', slots: 'hat' }, 'body.slots'],
    ['a body that is a JSON array', [{ base_body: 'b', slots: {} }], 'body'],
    ['a body that is a JSON string', 'base_human_male_01', 'body'],
    ['a body that is a JSON number', 12, 'body'],
    ['a body that is JSON null', null, 'body'],
    ['a document one byte over 16 KiB', documentOfSize(AVATAR_LOADOUT_MAX_BYTES + 1), 'body'],
    [
      'a document under 16 KiB in characters but over it in UTF-8 bytes',
      documentOfSize(AVATAR_LOADOUT_MAX_BYTES + 2, 'é'),
      'body',
    ],
    ['a string holding U+0000', { base_body: 'b', slots: { head: 'a\u0000b' } }, 'body.slots.head'],
    ['a string holding an unpaired surrogate', { base_body: 'b', slots: {}, tag: ['\ud800'] }, 'body.tag.0'],
    ['a key holding an unpaired surrogate', { base_body: 'b', slots: { '\udc00': 'x' } }, 'body.slots'],
  ])('refuses %s with 422 VALIDATION_FAILED and writes nothing', async (_name, body, path) => {
    const { user, access_token } = await registerUser(app());
    const first = await put(access_token, body);
    expect(first.statusCode).toBe(422);
    expect(first.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(first.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(first.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await rowCount(user.id)).toBe(0);

    const kept = { base_body: 'kept', slots: { head: 'h' } };
    expect((await put(access_token, kept)).statusCode).toBe(200);
    expect((await put(access_token, body)).statusCode).toBe(422);
    expect(await storedDocument(user.id)).toEqual(kept);
  });

  it('accepts a document of exactly 16 KiB of JSON and returns it whole', async () => {
    const { user, access_token } = await registerUser(app());
    const document = documentOfSize(AVATAR_LOADOUT_MAX_BYTES);
    const response = await put(access_token, document);
    expect(response.statusCode).toBe(200);
    expect(await storedDocument(user.id)).toEqual(document);
    expect((await get(access_token)).json()).toEqual({ ...document, is_default: false });
  });

  it('accepts exactly 16 KiB of multi-byte text, counting UTF-8 bytes', async () => {
    const { access_token } = await registerUser(app());
    const document = documentOfSize(AVATAR_LOADOUT_MAX_BYTES, 'é');
    expect((await put(access_token, document)).statusCode).toBe(200);
  });

  it('counts the size without is_default, so a loadout read back at the cap can be saved again', async () => {
    const { access_token } = await registerUser(app());
    const document = documentOfSize(AVATAR_LOADOUT_MAX_BYTES);
    expect((await put(access_token, document)).statusCode).toBe(200);
    const readBack = (await get(access_token)).json();
    expect(bytes(readBack)).toBeGreaterThan(AVATAR_LOADOUT_MAX_BYTES);
    expect((await put(access_token, readBack)).statusCode).toBe(200);
  });

  it.each(['GET', 'PUT'] as const)(
    'answers %s without a valid token with 401 UNAUTHENTICATED',
    async (method) => {
      for (const headers of [{}, { authorization: 'Bearer not.a.token' }]) {
        const response = await app().http.inject({
          method,
          url: '/api/avatar/loadout',
          headers,
          ...(method === 'PUT' ? { payload: { base_body: 'b', slots: {} } } : {}),
        });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
      }
    },
  );

  it('removes the loadout with the account', async () => {
    const { user, access_token } = await registerUser(app());
    await put(access_token, { base_body: 'b', slots: {} });
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
