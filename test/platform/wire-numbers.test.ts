import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';

/** Spellings of a number that are not decimal digits with an optional leading minus. */
const NOT_DECIMAL = ['%20', '%2010', '0x10', '1e3', '1.0', '+5', '0b1', '5%20', 'Infinity', 'NaN'];

describe('integers in paths and query strings', () => {
  const app = useTestApp();
  const { call } = callsAs(app);
  let owner: TokenResponse;
  let chunks: string;

  beforeAll(async () => {
    owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    chunks = `/api/worlds/${worldId}/rooms/${mainRoomId}/chunks`;
  });

  it.each(NOT_DECIMAL)('refuses the chunk coordinate %s with 422 naming it', async (x) => {
    const response = await call('GET', `${chunks}/${x}/0/0`, owner);
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'params.x' }] });
  });

  it.each(NOT_DECIMAL)('refuses the list limit %s with 422 naming it', async (limit) => {
    const response = await call('GET', `/api/friends?limit=${limit}`, owner);
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'querystring.limit' }],
    });
  });

  it('refuses an empty limit rather than reading it as 0 or the default', async () => {
    expect((await call('GET', '/api/friends?limit=', owner)).statusCode).toBe(422);
  });

  it('reads decimal digits, a leading minus and leading zeros as the number they spell', async () => {
    expect((await call('GET', `${chunks}/-2147483648/007/0`, owner)).json()).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect((await call('GET', '/api/friends?limit=007', owner)).statusCode).toBe(200);
    const history = await call('GET', `${chunks.replace(/\/rooms\/.*/, '')}/revisions?since=0`, owner);
    expect(history.statusCode, history.body).toBe(200);
  });

  it('refuses a revision bound spelled otherwise (since=1e3)', async () => {
    const response = await call('GET', `${chunks.replace(/\/rooms\/.*/, '')}/revisions?since=1e3`, owner);
    expect(response.statusCode).toBe(422);
  });
});
