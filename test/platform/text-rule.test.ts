import { describe, expect, it } from 'vitest';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
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
  const putStatus = (accessToken: string, status_message: string) =>
    app().http.inject({
      method: 'PUT',
      url: '/api/presence/status',
      headers: bearer(accessToken),
      payload: { status_message },
    });
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
      expect((await putStatus(access_token, 'building')).statusCode).toBe(200);
      const response = await putStatus(access_token, bad);
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
    const response = await putStatus(access_token, 'party 🎉');
    expect(response.json()).toEqual({ status_message: 'party 🎉' });
    expect(await statusOf(user.id)).toBe('party 🎉');
  });

  it('stores a status message without bidirectional controls, as chat bodies are', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await putStatus(access_token, ' \u202eafk\u202c until 9 ');
    expect(response.json()).toEqual({ status_message: 'afk until 9' });
    expect(await statusOf(user.id)).toBe('afk until 9');
  });

  it('clears the status message when it shows nothing: only zero-width characters', async () => {
    const { user, access_token } = await registerUser(app());
    expect((await putStatus(access_token, 'building')).statusCode).toBe(200);
    expect((await putStatus(access_token, '\u200b\u2060\ufeff')).json()).toEqual({ status_message: null });
    expect(await statusOf(user.id)).toBeNull();
  });

  it('stores a bio without bidirectional controls and otherwise as written', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'PUT',
      url: '/api/profile/me',
      headers: bearer(access_token),
      payload: { bio: ' builder of \u2067towers\u2069\n👨\u200d👩\u200d👧 ' },
    });
    expect(response.json().bio).toBe(' builder of towers\n👨\u200d👩\u200d👧 ');
    const stored = await queryRows<{ bio: string }>(app().db, 'select bio from profiles where user_id = ?', [
      user.id,
    ]);
    expect(stored).toEqual([{ bio: ' builder of towers\n👨\u200d👩\u200d👧 ' }]);
  });

  describe('in chunks', () => {
    const revisionsOf = async (worldId: string) =>
      (
        await queryRows<{ n: number }>(
          app().db,
          'select count(*)::int as n from chunk_revisions where world_id = ?',
          [worldId],
        )
      )[0]?.n;
    const chunkUrl = (worldId: string, roomId: string) =>
      `/api/worlds/${worldId}/rooms/${roomId}/chunks/0/0/0`;
    const putChunk = (token: string, url: string, contentType: string, payload: string | Buffer) =>
      app().http.inject({
        method: 'PUT',
        url,
        headers: { ...bearer(token), 'content-type': contentType, 'if-none-match': '*' },
        payload,
      });
    const view = (props: string) =>
      `{"objects":[{"id":"lamp","asset_id":"asset/lamp","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1],"props":${props}}]}`;

    it('refuses codec bytes with U+0000 in an id with 422 INVALID_CHUNK at its byte offset, and writes nothing', async () => {
      const { access_token } = await registerUser(app());
      const { worldId, mainRoomId } = await createWorld(app(), access_token);
      // The header takes 10 bytes and the id length one: the id "dooor" sits at 11-15.
      const bytes = chunkBytes('dooor');
      bytes[13] = 0;
      const response = await putChunk(
        access_token,
        chunkUrl(worldId, mainRoomId),
        'application/octet-stream',
        bytes,
      );
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({ code: 'INVALID_CHUNK', offset: 13 });
      expect(await revisionsOf(worldId)).toBe(0);
    });

    it.each([
      ['U+0000 in a props value', view('{"label":"lamp\\u0000"}'), 'objects[0].props.label'],
      ['an unpaired surrogate in a props value', view('{"label":"\\ud800"}'), 'objects[0].props.label'],
      ['U+0000 in a props key', view('{"a\\u0000":1}'), 'objects[0].props["a\\u0000"]'],
      [
        'U+0000 in an asset id',
        '{"objects":[{"id":"lamp","asset_id":"a\\u0000","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1]}]}',
        'objects[0].asset_id',
      ],
    ])(
      'refuses a JSON view with %s with 422 naming the field, and writes nothing',
      async (_case, body, path) => {
        const { access_token } = await registerUser(app());
        const { worldId, mainRoomId } = await createWorld(app(), access_token);
        const response = await putChunk(
          access_token,
          chunkUrl(worldId, mainRoomId),
          'application/json',
          body,
        );
        expect(response.statusCode).toBe(422);
        expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path }] });
        expect(await revisionsOf(worldId)).toBe(0);
      },
    );

    it('refuses a JSON batch whose chunk holds an unpaired surrogate with 422 naming the field, and writes nothing', async () => {
      const { access_token } = await registerUser(app());
      const { worldId, mainRoomId } = await createWorld(app(), access_token);
      const write = `{"room_id":"${mainRoomId}","x":0,"y":0,"z":0,"expected_revision":null,"chunk":${view('{"label":"\\udc00"}')}}`;
      const response = await app().http.inject({
        method: 'POST',
        url: `/api/worlds/${worldId}/chunks/batch`,
        headers: { ...bearer(access_token), 'content-type': 'application/json' },
        payload: `{"writes":[${write}]}`,
      });
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'body.writes.0.chunk.objects[0].props.label' }],
      });
      expect(await revisionsOf(worldId)).toBe(0);
    });
  });
});
