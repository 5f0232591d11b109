import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { App } from '../../src/app.js';
import { configFrom } from '../../src/config.js';
import { buildCheckedApp } from './app.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TcpProxy } from './tcp-proxy.js';

/** An app whose database connections pass through a TCP proxy that can go silent or refuse. */
export interface AppBehindDatabaseProxy {
  app: App;
  proxy: TcpProxy;
  /** The clone's direct connection, for checking rows while the app's path is cut. */
  testDb: TestDatabase;
  close(): Promise<void>;
}

/**
 * Postgres mode only: a database clone behind a TCP proxy, and an app that opens its own pool
 * through the proxy, exactly as production does with DATABASE_URL, with 1 s query and connect
 * timeouts so an outage answers promptly.
 */
export async function appBehindDatabaseProxy(): Promise<AppBehindDatabaseProxy> {
  const testDb = await createTestDatabase();
  const direct = new URL(testDb.url as string);
  const proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(direct);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-db-proxy-'));
  const app = await buildCheckedApp(
    configFrom({
      DATABASE_URL: viaProxy.toString(),
      DATA_DIR: dataDir,
      HTTP_PORT: 0,
      WS_PORT: 0,
      LOG_LEVEL: 'silent',
      MIGRATE_ON_START: false,
      DATABASE_QUERY_TIMEOUT_MS: 1000,
      DATABASE_CONNECT_TIMEOUT_MS: 1000,
    }),
  );
  return {
    app,
    proxy,
    testDb,
    async close() {
      await proxy.setMode('forward');
      await app.close();
      await proxy.close();
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
