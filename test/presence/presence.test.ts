import { afterAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, heartbeat, registerUser } from '../helpers/accounts.js';
import { buildTestApp, type TestApp, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets } from '../helpers/ws-client.js';

const lookup = (app: TestApp, token: string, userIds: unknown) =>
  app.http.inject({
    method: 'POST',
    url: '/api/presence/presence',
    headers: bearer(token),
    payload: { user_ids: userIds },
  });
const setStatus = (app: TestApp, token: string, payload: unknown) =>
  app.http.inject({
    method: 'PUT',
    url: '/api/presence/status',
    headers: bearer(token),
    payload: payload as object,
  });
const setPrivacy = (app: TestApp, token: string, privacy: Record<string, string>) =>
  app.http.inject({ method: 'PUT', url: '/api/profile/me', headers: bearer(token), payload: { privacy } });

async function statusOf(app: TestApp, viewer: TokenResponse, target: TokenResponse): Promise<string> {
  const response = await lookup(app, viewer.access_token, [target.user.id]);
  return (response.json() as { presence: Record<string, string> }).presence[target.user.id] as string;
}

function sql<Row = Record<string, unknown>>(
  app: TestApp,
  query: string,
  params: unknown[] = [],
): Promise<Row[]> {
  return queryRows<Row>(app.db, query, params);
}

describe('presence over REST', () => {
  const app = useTestApp();

  it('marks the caller online for the TTL and reports when it saw them', async () => {
    const user = await registerUser(app());
    const before = Date.now();
    const response = await heartbeat(app(), user.access_token);
    expect(response.statusCode).toBe(200);
    const body = response.json() as { status: string; ttl_seconds: number; last_seen_at: string };
    expect(body).toMatchObject({ status: 'online', ttl_seconds: 60 });
    expect(Date.parse(body.last_seen_at)).toBeGreaterThanOrEqual(before - 1000);
    const viewer = await registerUser(app());
    expect(await statusOf(app(), viewer, user)).toBe('online');
  });

  it('reports online, offline or unknown per id, collapsing duplicates', async () => {
    const viewer = await registerUser(app());
    const online = await registerUser(app());
    const offline = await registerUser(app());
    await heartbeat(app(), online.access_token);
    const unknown = '01a1ffb2-0000-7000-8000-000000000009';
    const response = await lookup(app(), viewer.access_token, [
      online.user.id,
      offline.user.id,
      unknown,
      'nope',
      online.user.id,
    ]);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      presence: {
        [online.user.id]: 'online',
        [offline.user.id]: 'offline',
        [unknown]: 'unknown',
        nope: 'unknown',
      },
    });
  });

  it.each([
    ['an empty list', []],
    ['201 ids', Array.from({ length: 201 }, (_, i) => `id${i}`)],
    ['a number among the ids', ['a', 5]],
    ['a string instead of a list', 'abc'],
  ])('answers a lookup with %s with 422', async (_name, ids) => {
    const viewer = await registerUser(app());
    const response = await lookup(app(), viewer.access_token, ids);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('requires a token for heartbeat, lookup and status', async () => {
    expect((await app().http.inject({ method: 'POST', url: '/api/presence/heartbeat' })).statusCode).toBe(
      401,
    );
    const noToken = await app().http.inject({
      method: 'POST',
      url: '/api/presence/presence',
      payload: { user_ids: ['a'] },
    });
    expect(noToken.statusCode).toBe(401);
    const status = await app().http.inject({
      method: 'PUT',
      url: '/api/presence/status',
      payload: { status_message: 'x' },
    });
    expect(status.statusCode).toBe(401);
  });

  it('shows a user who hides presence from everybody as offline to others but online to themselves', async () => {
    const hidden = await registerUser(app());
    const viewer = await registerUser(app());
    expect((await setPrivacy(app(), hidden.access_token, { presence_visibility: 'nobody' })).statusCode).toBe(
      200,
    );
    await heartbeat(app(), hidden.access_token);
    expect(await statusOf(app(), viewer, hidden)).toBe('offline');
    expect(await statusOf(app(), hidden, hidden)).toBe('online');
  });

  it('shows friends-only presence to friends and hides it from others', async () => {
    const target = await registerUser(app());
    const friend = await registerUser(app());
    const stranger = await registerUser(app());
    await setPrivacy(app(), target.access_token, { presence_visibility: 'friends' });
    await sql(
      app(),
      `insert into friendships (requester_id, addressee_id, status) values (?, ?, 'accepted')`,
      [friend.user.id, target.user.id],
    );
    await heartbeat(app(), target.access_token);
    expect(await statusOf(app(), friend, target)).toBe('online');
    expect(await statusOf(app(), stranger, target)).toBe('offline');
  });

  it('hides presence in both directions once either user blocked the other', async () => {
    const blocker = await registerUser(app());
    const blocked = await registerUser(app());
    await sql(app(), 'insert into blocks (blocker_id, blocked_id) values (?, ?)', [
      blocker.user.id,
      blocked.user.id,
    ]);
    await heartbeat(app(), blocker.access_token);
    await heartbeat(app(), blocked.access_token);
    expect(await statusOf(app(), blocked, blocker)).toBe('offline');
    expect(await statusOf(app(), blocker, blocked)).toBe('offline');
  });

  it('writes last_seen_at in coalesced batches, not once per heartbeat', async () => {
    const user = await registerUser(app());
    for (let i = 0; i < 5; i++) await heartbeat(app(), user.access_token);
    const before: { last_seen_at: string | null }[] = await sql(
      app(),
      'select last_seen_at from users where id = ?',
      [user.user.id],
    );
    expect(before[0]?.last_seen_at).toBeNull();
    await app().modules.presence.flushLastSeen();
    const after: { last_seen_at: string | null }[] = await sql(
      app(),
      'select last_seen_at from users where id = ?',
      [user.user.id],
    );
    expect(Date.parse(String(after[0]?.last_seen_at))).toBeGreaterThan(Date.now() - 60_000);
  });

  it('trims the status message, stores it on the account and clears it when empty', async () => {
    const user = await registerUser(app());
    const set = await setStatus(app(), user.access_token, { status_message: '   building a castle   ' });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toEqual({ status_message: 'building a castle' });
    const me = await app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: bearer(user.access_token),
    });
    expect(me.json()).toMatchObject({ status_message: 'building a castle' });
    const cleared = await setStatus(app(), user.access_token, { status_message: '    ' });
    expect(cleared.json()).toEqual({ status_message: null });
  });

  it("stores each user's latest status message when many users set theirs at once", async () => {
    const users = await Promise.all(Array.from({ length: 6 }, () => registerUser(app())));
    // Users at once, so the node writes their messages in shared round trips; each user's in turn.
    const answers = await Promise.all(
      users.map(async (user, u) => {
        const mine = [];
        for (const n of [1, 2, 3])
          mine.push(
            (await setStatus(app(), user.access_token, { status_message: `user ${u} message ${n}` })).json(),
          );
        return mine;
      }),
    );
    expect(answers).toEqual(
      users.map((_, u) => [1, 2, 3].map((n) => ({ status_message: `user ${u} message ${n}` }))),
    );
    await app().modules.presence.flushStatusMessages();
    const stored: { id: string; status_message: string }[] = await sql(
      app(),
      'select id, status_message from users where id in (?)',
      [users.map((user) => user.user.id)],
    );
    expect(new Map(stored.map((row) => [row.id, row.status_message]))).toEqual(
      new Map(users.map((user, u) => [user.user.id, `user ${u} message 3`])),
    );
  });

  it('accepts 140 characters after trimming and refuses 141 with 422, keeping the old message', async () => {
    const user = await registerUser(app());
    await setStatus(app(), user.access_token, { status_message: 'kept' });
    const exact = await setStatus(app(), user.access_token, { status_message: `  ${'a'.repeat(140)}  ` });
    expect(exact.statusCode).toBe(200);
    const tooLong = await setStatus(app(), user.access_token, { status_message: 'b'.repeat(141) });
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    await app().modules.presence.flushStatusMessages();
    const stored: { status_message: string }[] = await sql(
      app(),
      'select status_message from users where id = ?',
      [user.user.id],
    );
    expect(stored[0]?.status_message).toBe('a'.repeat(140));
  });

  it.each([
    ['a number', { status_message: 5 }],
    ['a missing field', {}],
    ['an unknown field', { status_message: 'x', mood: 'happy' }],
  ])('answers a status body with %s with 422', async (_name, payload) => {
    const user = await registerUser(app());
    expect((await setStatus(app(), user.access_token, payload)).statusCode).toBe(422);
  });
});

describe('presence expiry', () => {
  it('turns a user offline when the TTL lapses while last_seen_at stays', async () => {
    const app = await buildTestApp({ PRESENCE_TTL_SECONDS: 1 });
    try {
      const user = await registerUser(app);
      const viewer = await registerUser(app);
      const beat = (await heartbeat(app, user.access_token)).json() as { last_seen_at: string };
      expect(await statusOf(app, viewer, user)).toBe('online');
      await new Promise((resolve) => setTimeout(resolve, 1300));
      expect(await statusOf(app, viewer, user)).toBe('offline');
      await app.modules.presence.flushLastSeen();
      const me = await app.http.inject({
        method: 'GET',
        url: '/api/users/me',
        headers: bearer(user.access_token),
      });
      expect((me.json() as { last_seen_at: string }).last_seen_at).toBe(beat.last_seen_at);
    } finally {
      await app.close();
    }
  });
});

describe('listeners of presence ending', () => {
  const app = useTestApp({ PRESENCE_TTL_SECONDS: 1 });
  const sockets = openedSockets(() => app().wsUrl);
  afterAll(() => sockets.closeAll());

  it('hear of a closed last socket and of a lapsed REST heartbeat, once the user reads offline', async () => {
    const told: { userId: string; online: boolean }[] = [];
    const { presence } = app().modules;
    presence.onWentOffline(async (userId) => {
      told.push({ userId, online: (await presence.onlineAmong([userId])).size > 0 });
    });
    const socketUser = await registerUser(app());
    const restUser = await registerUser(app());
    const socket = await sockets.open(socketUser.access_token);
    await heartbeat(app(), restUser.access_token);
    socket.close();
    const expected = [socketUser, restUser]
      .map((user) => ({ userId: user.user.id, online: false }))
      .sort((a, b) => a.userId.localeCompare(b.userId));
    await vi.waitFor(
      () => expect([...told].sort((a, b) => a.userId.localeCompare(b.userId))).toEqual(expected),
      { timeout: 10_000, interval: 50 },
    );
  });
});
