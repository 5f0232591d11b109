import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { asAppError } from '../../src/platform/errors.js';
import {
  bearer,
  getMe,
  heartbeat,
  login,
  PASSWORD,
  registerUser,
  uniqueUsername,
} from '../helpers/accounts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';
import { type AppBehindDatabaseProxy, appBehindDatabaseProxy } from '../helpers/database-proxy.js';
import { freePort, hasRedisServer, RedisServer } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

/**
 * What clients see while Redis or the database is down or silent: a 503 problem (or error frame)
 * with code SERVICE_UNAVAILABLE and a retry hint, never a 500 or a hang; and the service heals by
 * itself once the dependency is back. Every request of an outage is answered while the outage
 * lasts (it ends only when the test ends it), so an answer at all shows the service gave up on
 * the dependency by its own timeouts (500 ms for Redis, 1 s for the database) instead of waiting
 * for it; a request that waited would hang until the test's timeout.
 */

function expectServiceUnavailable(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(503);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.headers['retry-after']).toBe('1');
  expect(response.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  // No driver text (SQL, hosts, commands) reaches the client.
  expect(response.json().detail).toBe(
    'A backing service is unavailable or did not answer in time; retry shortly.',
  );
}

/** Retries `check` until it passes, for recovery that happens on the dependency's schedule. */
async function eventually(check: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const started = performance.now();
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (performance.now() - started > timeoutMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const setStatus = (app: App, token: string, statusMessage: string) =>
  app.http.inject({
    method: 'PUT',
    url: '/api/presence/status',
    headers: bearer(token),
    payload: { status_message: statusMessage },
  });
const sendDm = (app: App, token: string, peerId: string, body: string) =>
  app.http.inject({
    method: 'POST',
    url: `/api/chat/dm/${peerId}/messages`,
    headers: bearer(token),
    payload: { body },
  });

/** The status message in the database, once the app's coalesced status writes were flushed. */
async function storedStatus(app: App, db: TestDatabase, userId: string): Promise<unknown> {
  await app.modules.presence.flushStatusMessages();
  return databaseStatus(db, userId);
}

/** The status message the database holds now (read directly, not through the app). */
async function databaseStatus(db: TestDatabase, userId: string): Promise<unknown> {
  const rows = await queryRows<{ status_message: string | null }>(
    db.db,
    'select status_message from users where id = ?',
    [userId],
  );
  return rows[0]?.status_message;
}

/**
 * Redis stopped (connections refused: commands fail at once) or silent (a black-holed network:
 * commands fail after the command timeout), played on a private redis-server.
 */
describe.skipIf(!hasRedisServer()).each([
  { outage: 'stopped', state: 'down' },
  { outage: 'silent', state: 'silent' },
] as const)('a Redis outage: Redis $outage (needs redis-server on PATH)', ({ outage, state }) => {
  let redis: RedisServer;
  let proxy: TcpProxy | undefined;
  let app: TestApp;
  let user: TokenResponse;
  let peer: TokenResponse;
  let socket: TestSocket;
  const lockedOutName = uniqueUsername('locked');

  beforeAll(async () => {
    redis = await RedisServer.start();
    if (outage === 'silent') proxy = await TcpProxy.start({ host: '127.0.0.1', port: redis.port });
    const url = proxy ? `redis://127.0.0.1:${proxy.port}` : redis.url;
    app = await buildTestApp({ REDIS_URL: url, LOGIN_MAX_FAILURES: 2 });
    user = await registerUser(app);
    peer = await registerUser(app);
    await registerUser(app, lockedOutName);
    socket = await authedSocket(app.wsUrl, user.access_token);
    if (proxy) await proxy.setMode('blackhole');
    else await redis.stop();
  });

  afterAll(async () => {
    socket?.close();
    await proxy?.setMode('forward');
    await app?.close();
    await proxy?.close();
    await redis?.stop();
  });

  describe(`while Redis is ${state}`, () => {
    it('authenticated routes answer 503 SERVICE_UNAVAILABLE with Retry-After, not waiting for Redis', async () => {
      for (const send of [() => getMe(app, user.access_token), () => heartbeat(app, user.access_token)]) {
        const result = await send();
        expectServiceUnavailable(result);
      }
    });

    it('a refused write leaves the database unchanged', async () => {
      const result = await setStatus(app, user.access_token, 'set during the outage');
      expectServiceUnavailable(result);
      expect(await storedStatus(app, app.testDb, user.user.id)).toBeNull();
    });

    it('a direct message answers 503, not waiting for Redis, and stores nothing: the send limiter never fails open', async () => {
      const result = await sendDm(app, user.access_token, peer.user.id, 'during the outage');
      expectServiceUnavailable(result);
      expect(await queryRows(app.db, 'select id from messages where sender_id = ?', [user.user.id])).toEqual(
        [],
      );
    });

    it('a gateway frame gets a SERVICE_UNAVAILABLE error frame with retry_after, not waiting for Redis', async () => {
      // A status message is written to Redis before it is acknowledged (a heartbeat on a socket is not: the socket already keeps presence).
      const result = await request(socket, 'presence.status', { status_message: 'waiting for Redis' });
      expect(result).toMatchObject({ t: 'error', code: 'SERVICE_UNAVAILABLE', retry_after: 1 });
    });

    it('login still succeeds, not waiting for Redis, since it needs only the database and the limiters fall back to memory', async () => {
      const result = await login(app, user.user.username, PASSWORD);
      expect(result.statusCode).toBe(200);
      expect(result.json()).toMatchObject({ user: { id: user.user.id }, token_type: 'Bearer' });
    });

    it('failed logins are still counted by the in-memory insurance limiter and lock the account', async () => {
      expect((await login(app, lockedOutName, 'wrong password 1')).statusCode).toBe(401);
      expect((await login(app, lockedOutName, 'wrong password 2')).statusCode).toBe(401);
      const locked = await login(app, lockedOutName, PASSWORD);
      expect(locked.statusCode).toBe(429);
      expect(locked.json()).toMatchObject({ code: 'RATE_LIMITED' });
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    });
  });

  describe('once Redis is back', () => {
    beforeAll(async () => {
      if (proxy) await proxy.setMode('forward');
      else await redis.start();
    });

    it('the same routes, writes and frames work again within a few seconds, without a restart', async () => {
      await eventually(async () => expect((await getMe(app, user.access_token)).statusCode).toBe(200));
      expect((await heartbeat(app, user.access_token)).statusCode).toBe(200);
      const written = await setStatus(app, user.access_token, 'back again');
      expect(written.statusCode).toBe(200);
      expect((await sendDm(app, user.access_token, peer.user.id, 'back again')).statusCode).toBe(201);
      expect(await storedStatus(app, app.testDb, user.user.id)).toBe('back again');
      expect(await request(socket, 'presence.heartbeat')).toMatchObject({ t: 'ack' });
    });
  });
});

/**
 * The database behind a TCP proxy that can go silent (black hole) or refuse connections. The app
 * opens its own pool through the proxy, exactly as production does with DATABASE_URL; rows are
 * checked through the clone's direct connection.
 */
describe.skipIf(!process.env.DATABASE_URL)(
  'a database outage (Postgres mode only: the embedded database runs in-process, with no network to lose)',
  () => {
    let behind: AppBehindDatabaseProxy | undefined;
    let testDb: TestDatabase;
    let proxy: TcpProxy;
    let app: App;
    let user: TokenResponse;

    beforeAll(async () => {
      behind = await appBehindDatabaseProxy();
      ({ testDb, proxy, app } = behind);
      user = await registerUser(app);
      // The first verified token rebuilds the revocation marks from the database; after that a
      // token needs only the KV store, as it would on a node that has been serving for a while.
      expect((await getMe(app, user.access_token)).statusCode).toBe(200);
    });

    afterAll(async () => {
      await behind?.close();
    });

    it('while the network is silent, reads and logins answer 503 SERVICE_UNAVAILABLE, not waiting for the database, and a status message waits to be written', async () => {
      await proxy.setMode('blackhole');
      // The first request finds a pooled connection and times out on its query; the next ones need
      // a new connection, which times out connecting.
      for (let attempt = 0; attempt < 3; attempt++) {
        const result = await getMe(app, user.access_token);
        expectServiceUnavailable(result);
      }
      // A status message needs only the KV store: it is accepted at once and written, coalesced,
      // once the database answers again.
      const result = await setStatus(app, user.access_token, 'set during the outage');
      expect(result.statusCode).toBe(200);
      await expect(app.modules.presence.flushStatusMessages()).rejects.toThrow();
      expect(await databaseStatus(testDb, user.user.id)).toBeNull();
      const loggingIn = await login(app, user.user.username, PASSWORD);
      expectServiceUnavailable(loggingIn);
    });

    it('once the network is back, requests succeed again within a few seconds on fresh connections and the waiting status message is written', async () => {
      await proxy.setMode('forward');
      await eventually(async () => expect((await getMe(app, user.access_token)).statusCode).toBe(200));
      expect(await storedStatus(app, testDb, user.user.id)).toBe('set during the outage');
      expect((await setStatus(app, user.access_token, 'after the silence')).statusCode).toBe(200);
      expect(await storedStatus(app, testDb, user.user.id)).toBe('after the silence');
    });

    it('while the database refuses connections, requests answer 503 SERVICE_UNAVAILABLE, not waiting for the database, and a status message waits to be written', async () => {
      await proxy.setMode('refuse');
      for (let attempt = 0; attempt < 3; attempt++) {
        const result = await getMe(app, user.access_token);
        expectServiceUnavailable(result);
      }
      const result = await setStatus(app, user.access_token, 'set while refused');
      expect(result.statusCode).toBe(200);
      await expect(app.modules.presence.flushStatusMessages()).rejects.toThrow();
      expect(await databaseStatus(testDb, user.user.id)).toBe('after the silence');
      const loggingIn = await login(app, user.user.username, PASSWORD);
      expectServiceUnavailable(loggingIn);
    });

    it('once the database accepts connections again, requests succeed within a few seconds and the waiting status message is written', async () => {
      await proxy.setMode('forward');
      await eventually(async () => expect((await getMe(app, user.access_token)).statusCode).toBe(200));
      expect(await storedStatus(app, testDb, user.user.id)).toBe('set while refused');
      expect((await setStatus(app, user.access_token, 'after the refusal')).statusCode).toBe(200);
      expect(await storedStatus(app, testDb, user.user.id)).toBe('after the refusal');
    });
  },
);

describe('telling dependency failures from bugs', () => {
  it('a refused database connection is SERVICE_UNAVAILABLE, logged at warn with its reason only', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: await freePort(), user: 'atrium_secret_user' });
    const refused = await client.connect().then(
      () => undefined,
      (error: unknown) => error,
    );
    const warnings: unknown[] = [];
    const error = asAppError(refused, { warn: (fields, message) => warnings.push({ fields, message }) });
    expect(error.code).toBe('SERVICE_UNAVAILABLE');
    expect(error.extra.retryAfterSeconds).toBe(1);
    expect(warnings).toEqual([
      { fields: { reason: 'ECONNREFUSED' }, message: 'a dependency failed; answering SERVICE_UNAVAILABLE' },
    ]);
  });

  it('a failing SQL statement and a plain bug stay INTERNAL and are not logged as dependency failures', async () => {
    const testDb = await createTestDatabase();
    try {
      const failed = await queryRows(testDb.db, 'select * from no_such_table').then(
        () => undefined,
        (error: unknown) => error,
      );
      const warnings: unknown[] = [];
      const log = { warn: (fields: object) => warnings.push(fields) };
      expect(asAppError(failed, log).code).toBe('INTERNAL');
      expect(asAppError(new TypeError('x is undefined'), log).code).toBe('INTERNAL');
      expect(warnings).toEqual([]);
    } finally {
      await testDb.drop();
    }
  });
});
