import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { configFrom } from '../../src/config.js';
import { getMe, heartbeat, registerUser } from '../helpers/accounts.js';
import { buildCheckedApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

/**
 * A presence change whose announcement failed because the database was down (the event reads the
 * status message and the audience from it): the KV store already holds the new state, so the
 * client's retry changes nothing, and without a new try the subscribers would keep the old status.
 * Postgres mode only: the database is cut off through a TCP proxy.
 */
describe.skipIf(!process.env.DATABASE_URL)('presence announcements the database failed', () => {
  let testDb: TestDatabase;
  let proxy: TcpProxy;
  let app: App;
  let dataDir: string;
  let subject: TokenResponse;
  let watching: TestSocket;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    const direct = new URL(testDb.url as string);
    proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-announce-'));
    app = await buildCheckedApp(
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
    const { wsPort } = await app.listen();
    subject = await registerUser(app);
    const watcher = await registerUser(app);
    // The first verified token rebuilds the revocation marks from the database; after that a
    // heartbeat needs the database only for the announcement.
    expect((await getMe(app, subject.access_token)).statusCode).toBe(200);
    watching = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, watcher.access_token);
  });

  afterAll(async () => {
    watching?.close();
    await proxy?.setMode('forward');
    await app?.close();
    await proxy?.close();
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('tells a subscriber the user came online once the database is back, though the heartbeat that did it answered 503', async () => {
    const subscribed = await request(watching, 'presence.subscribe', { user_ids: [subject.user.id] });
    expect(subscribed.d).toMatchObject({ presence: { [subject.user.id]: 'offline' } });

    await proxy.setMode('refuse');
    expect((await heartbeat(app, subject.access_token)).statusCode).toBe(503);
    await proxy.setMode('forward');
    // The client's retry: the user is online already, so it announces nothing itself.
    expect((await heartbeat(app, subject.access_token)).statusCode).toBe(200);

    const event = await watching.next(
      (frame) => frame.t === 'presence' && (frame.d as { user_id?: string }).user_id === subject.user.id,
      20_000,
    );
    expect(event.d).toMatchObject({ user_id: subject.user.id, status: 'online' });
  });
});
