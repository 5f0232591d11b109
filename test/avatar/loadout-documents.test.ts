import { describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_DEPTH } from '../../protocol/documents.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/**
 * JSON with keys sorted at every level: jsonb keeps no key order, and vitest's deep equality reads
 * an own `constructor` key as the object's class, so documents are compared as canonical text.
 */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : 1)))
      : item,
  );

/** JSON text of `levels` nested arrays around a 1, e.g. 2 -> [[1]]. */
const nestedArrays = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;

describe('avatar loadout documents with hostile keys and nesting', () => {
  const app = useTestApp();

  const storedText = async (userId: string) =>
    (
      await queryRows<{ document: string | null }>(
        app().db,
        'select document::text as document from avatar_loadouts where user_id = ?',
        [userId],
      )
    )[0]?.document ?? null;
  /** Sends JSON text as it is, so keys such as __proto__ reach the server exactly as written. */
  const putText = (token: string, json: string) =>
    app().http.inject({
      method: 'PUT',
      url: '/api/avatar/loadout',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: json,
    });
  const get = (token: string) =>
    app().http.inject({ method: 'GET', url: '/api/avatar/loadout', headers: bearer(token) });

  it.each([
    ['a top-level constructor key', '{"base_body":"b","slots":{},"constructor":{"name":"x"}}'],
    ['a constructor slot', '{"base_body":"b","slots":{"constructor":{"item":"hat"}}}'],
    ['a constructor key deep inside', '{"base_body":"b","slots":{"a":[{"constructor":1}]}}'],
    ['a top-level __proto__ key', '{"base_body":"b","slots":{},"__proto__":{"polluted":true}}'],
    ['a __proto__ slot', '{"base_body":"b","slots":{"__proto__":"cape_01","prototype":2}}'],
  ])('stores and returns a loadout with %s verbatim', async (_name, json) => {
    const { user, access_token } = await registerUser(app());
    const saved = await putText(access_token, json);
    expect(saved.statusCode).toBe(200);
    const expected = canonical({ ...JSON.parse(json), is_default: false });
    expect(canonical(JSON.parse(saved.body))).toBe(expected);
    expect(canonical(JSON.parse((await get(access_token)).body))).toBe(expected);
    expect(canonical(JSON.parse((await storedText(user.id)) ?? 'null'))).toBe(canonical(JSON.parse(json)));
    // Stored as data: nothing reached any prototype.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`accepts a loadout nested ${MAX_DOCUMENT_DEPTH} levels deep`, async () => {
    const { access_token } = await registerUser(app());
    // The document is level 1 and slots level 2, so the arrays inside add MAX_DOCUMENT_DEPTH - 2.
    const json = `{"base_body":"b","slots":{"deep":${nestedArrays(MAX_DOCUMENT_DEPTH - 2)}}}`;
    expect((await putText(access_token, json)).statusCode).toBe(200);
  });

  it.each([
    ['one level over the limit', MAX_DOCUMENT_DEPTH - 1],
    ['2,500 arrays deep (5 KB)', 2500],
  ])('refuses a loadout nested %s with 422 and writes nothing', async (_name, levels) => {
    const { user, access_token } = await registerUser(app());
    const response = await putText(
      access_token,
      `{"base_body":"b","slots":{"deep":${nestedArrays(levels)}}}`,
    );
    expect(response.statusCode).toBe(422);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [
        {
          path: 'body',
          message: `must not nest objects or arrays more than ${MAX_DOCUMENT_DEPTH} levels deep`,
        },
      ],
    });
    expect(await storedText(user.id)).toBeNull();
  });

  it('keeps the stored loadout when a later save is refused for its depth', async () => {
    const { user, access_token } = await registerUser(app());
    await putText(access_token, '{"base_body":"kept","slots":{}}');
    const refused = await putText(access_token, `{"base_body":"b","slots":${nestedArrays(3000)}}`);
    expect(refused.statusCode).toBe(422);
    expect(JSON.parse((await storedText(user.id)) ?? 'null')).toEqual({ base_body: 'kept', slots: {} });
  });
});
