import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { type Database, executeBound, openDatabase } from '../../src/platform/db.js';
import { asAppError } from '../../src/platform/errors.js';
import { createTestDatabase, singleConnection, type TestDatabase } from '../helpers/database.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** The service's own pool (src/platform/db-pool.ts): node-pg's pool with the service's bounds. */
describe('the database pool', () => {
  let testDb: TestDatabase;
  let single: Database;
  let oneConnection: Awaited<ReturnType<typeof singleConnection>> | undefined;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    // One connection: the embedded database's own pool, and on Postgres one opened for these tests.
    oneConnection = await singleConnection(testDb);
    single = oneConnection.db;
  });

  afterAll(async () => {
    await oneConnection?.close();
    await testDb?.drop();
  });

  it('reports the connections lent out, the idle ones and the callers waiting, as the pool metrics read them', async () => {
    const first = await single.pool.acquire();
    expect(single.poolUsage()).toEqual({ inUse: 1, idle: 0, waiting: 0 });
    const second = single.pool.acquire();
    expect(single.poolUsage()).toEqual({ inUse: 1, idle: 0, waiting: 1 });
    await single.pool.release(first);
    const handedOn = await second;
    // The same connection, handed to the caller that waited.
    expect(handedOn).toBe(first);
    expect(single.poolUsage()).toEqual({ inUse: 1, idle: 0, waiting: 0 });
    await single.pool.release(handedOn);
    expect(single.poolUsage()).toEqual({ inUse: 0, idle: 1, waiting: 0 });
    await single.ping();
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'gives up waiting for a connection after the connect and query bounds, as SERVICE_UNAVAILABLE',
    async () => {
      const bounded = await openDatabase(
        configFrom({
          DATABASE_URL: testDb.url,
          DATABASE_POOL_SIZE: 1,
          // Long enough for the first connection to be made on a loaded machine, which the same
          // bound limits: it is the wait for the pool's only connection that must time out.
          DATABASE_CONNECT_TIMEOUT_MS: 1000,
          DATABASE_QUERY_TIMEOUT_MS: 1000,
        }),
      );
      const held = await bounded.pool.acquire();
      try {
        const waited = await executeBound(bounded.data, 'select 1', []).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(waited).toMatchObject({ message: 'timeout exceeded when trying to connect' });
        expect(asAppError(waited).code).toBe('SERVICE_UNAVAILABLE');
      } finally {
        await bounded.pool.release(held);
        await bounded.close();
      }
    },
  );

  it.skipIf(!process.env.DATABASE_URL)(
    'discards a connection a timed-out query left busy and answers the next statement on a fresh one',
    async () => {
      const direct = new URL(testDb.url as string);
      const proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
      const viaProxy = new URL(direct);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      const db = await openDatabase(
        configFrom({
          DATABASE_URL: viaProxy.toString(),
          DATABASE_POOL_SIZE: 1,
          DATABASE_QUERY_TIMEOUT_MS: 300,
        }),
      );
      const backend = async () =>
        (await executeBound<{ pid: number }>(db.data, 'select pg_backend_pid() as pid', []))[0]?.pid;
      try {
        const before = await backend();
        await proxy.setMode('blackhole');
        await expect(backend()).rejects.toThrow('Query read timeout');
        // Not returned to the pool: its answer may still come, ahead of the next statement's.
        expect(db.poolUsage()).toEqual({ inUse: 0, idle: 0, waiting: 0 });
        await proxy.setMode('forward');
        const after = await backend();
        expect(after).toEqual(expect.any(Number));
        expect(after).not.toBe(before);
      } finally {
        await proxy.setMode('forward');
        await db.close();
        await proxy.close();
      }
    },
  );
});
