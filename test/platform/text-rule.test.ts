import { describe, expect, it } from 'vitest';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { authedSocket, request } from '../helpers/ws-client.js';

/** NUL cannot be stored in Postgres text; a lone surrogate would be stored as U+FFFD. */
const UNSTORABLE = [
  ['U+0000', 'away\u0000now'],
  ['a lone high surrogate', 'away \ud83c'],
  ['a lone low surrogate', '\udf89 away'],
] as const;

describe('the shared text rule', () => {
  const app = useTestApp();

  // Status messages reach the database coalesced; the stored value is read after a flush.
  const statusOf = async (userId: string) => {
    await app().modules.presence.flushStatusMessages();
    return (
      await queryRows<{ status_message: string | null }>(
        app().db,
        'select status_message from users where id = ?',
        [userId],
      )
    )[0]?.status_message;
  };
  const sessionCount = async () =>
    (await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from sessions'))[0]?.n;

  it.each(UNSTORABLE)(
    'refuses a login username holding %s with 422 and starts no session',
    async (_name, bad) => {
      const before = await sessionCount();
      const response = await app().http.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { username: bad, password: PASSWORD },
      });
      expect(response.statusCode).toBe(422);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'body.username' }],
      });
      expect(await sessionCount()).toBe(before);
    },
  );

  it.each(UNSTORABLE)(
    'refuses a REST status message holding %s with 422 and keeps the stored one',
    async (_name, bad) => {
      const { user, access_token } = await registerUser(app());
      const put = (status_message: string) =>
        app().http.inject({
          method: 'PUT',
          url: '/api/presence/status',
          headers: bearer(access_token),
          payload: { status_message },
        });
      expect((await put('building')).statusCode).toBe(200);
      const response = await put(bad);
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'body.status_message' }],
      });
      expect(await statusOf(user.id)).toBe('building');
    },
  );

  it.each(UNSTORABLE)(
    'refuses a presence.status frame holding %s with VALIDATION_FAILED and keeps the stored one',
    async (_name, bad) => {
      const { user, access_token } = await registerUser(app());
      const socket = await authedSocket(app().wsUrl, access_token);
      try {
        expect((await request(socket, 'presence.status', { status_message: 'building' })).t).toBe('ack');
        const refused = await request(socket, 'presence.status', { status_message: bad });
        expect(refused).toMatchObject({
          t: 'error',
          code: 'VALIDATION_FAILED',
          errors: [{ path: 'd.status_message' }],
        });
        expect(await statusOf(user.id)).toBe('building');
      } finally {
        socket.close();
      }
    },
  );

  it('stores a status message with a paired surrogate (an emoji) as sent', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'PUT',
      url: '/api/presence/status',
      headers: bearer(access_token),
      payload: { status_message: 'party 🎉' },
    });
    expect(response.json()).toEqual({ status_message: 'party 🎉' });
    expect(await statusOf(user.id)).toBe('party 🎉');
  });
});
