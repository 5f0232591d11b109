import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type Kv, MemoryKv } from '../../src/platform/kv/index.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { buildCheckedApp, testConfig } from '../helpers/app.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/**
 * A logged-out access token must stay refused when the KV store loses its revocation marks: an
 * embedded restart (the in-process store starts empty) or a Redis that lost its data.
 */
describe('session revocations survive a lost KV store', () => {
  let testDb: TestDatabase;
  let dataDir: string;
  let generation = 0;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-revocations-'));
  });
  afterAll(async () => {
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /**
   * One service instance on the shared database and signing keys, with a KV store that starts
   * empty: a fresh in-process store, or a fresh namespace of the run's Redis.
   */
  const start = (): Promise<App> => {
    generation += 1;
    const config = testConfig(dataDir, testDb, {
      REDIS_KEY_PREFIX: `test:revocations:${process.pid}:${Date.now()}:${generation}:`,
    });
    return buildCheckedApp(config, { db: testDb.db, ...(config.REDIS_URL ? {} : { kv: new MemoryKv() }) });
  };

  /** Deletes every key of the instance's KV store, as a Redis restart without persistence does. */
  const flush = async (app: App) => {
    if (app.kv instanceof MemoryKv) {
      (app.kv as unknown as { entries: Map<string, unknown> }).entries.clear();
      return;
    }
    const redis = new Redis(app.config.REDIS_URL as string);
    try {
      const keys = await redis.keys(`${app.config.REDIS_KEY_PREFIX}*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  };

  const me = (app: App, token: string) =>
    app.http.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token) });
  const logout = (app: App, refresh_token: string) =>
    app.http.inject({ method: 'POST', url: '/api/auth/logout', payload: { refresh_token } });
  const close = async (app: App) => {
    const kv: Kv = app.kv;
    await app.close();
    if (kv instanceof MemoryKv) await kv.close();
  };

  it('refuses a logged-out access token after a restart', async () => {
    const first = await start();
    const session = await registerUser(first);
    expect((await logout(first, session.refresh_token)).statusCode).toBe(204);
    expect((await me(first, session.access_token)).statusCode).toBe(401);
    await close(first);

    const second = await start();
    try {
      const response = await me(second, session.access_token);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({
        code: 'UNAUTHENTICATED',
        detail: 'The session has been revoked.',
      });
      // Other sessions are unaffected.
      expect((await me(second, (await registerUser(second)).access_token)).statusCode).toBe(200);
    } finally {
      await close(second);
    }
  });

  it('refuses a logged-out access token after the KV store lost its data', async () => {
    const app = await start();
    try {
      const session = await registerUser(app);
      const other = await registerUser(app);
      expect((await logout(app, session.refresh_token)).statusCode).toBe(204);
      await flush(app);
      expect((await me(app, session.access_token)).statusCode).toBe(401);
      expect((await me(app, other.access_token)).statusCode).toBe(200);
    } finally {
      await close(app);
    }
  });

  it('refuses the access token of a deleted account after a restart, though its sessions are gone', async () => {
    const first = await start();
    const session = await registerUser(first);
    const deleted = await first.http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(session.access_token),
      payload: { password: PASSWORD },
    });
    expect(deleted.statusCode).toBe(204);
    await close(first);

    const second = await start();
    try {
      const heartbeat = await second.http.inject({
        method: 'POST',
        url: '/api/presence/heartbeat',
        headers: bearer(session.access_token),
      });
      expect(heartbeat.statusCode).toBe(401);
    } finally {
      await close(second);
    }
  });

  it('forgets revocations older than a token lifetime when it records new ones', async () => {
    const app = await start();
    try {
      await queryRows(testDb.db, 'insert into session_revocations values (?, ?)', [
        '00000000-0000-7000-8000-000000000001',
        new Date(Date.now() - (app.config.ACCESS_TOKEN_TTL_SECONDS + 120) * 1000),
      ]);
      const session = await registerUser(app);
      await logout(app, session.refresh_token);
      const ids = (
        await queryRows<{ session_id: string }>(testDb.db, 'select session_id from session_revocations')
      ).map((row) => row.session_id);
      expect(ids).not.toContain('00000000-0000-7000-8000-000000000001');
      expect(ids.length).toBeGreaterThan(0);
    } finally {
      await close(app);
    }
  });
});
