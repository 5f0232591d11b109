import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { getMe, heartbeat, registerUser } from '../helpers/accounts.js';
import { type AppBehindDatabaseProxy, appBehindDatabaseProxy } from '../helpers/database-proxy.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

/**
 * A presence change whose announcement failed because the database was down (the event reads the
 * status message and the audience from it): the KV store already holds the new state, so the
 * client's retry changes nothing, and without a new try the subscribers would keep the old status.
 * Postgres mode only: the database is cut off through a TCP proxy.
 */
describe.skipIf(!process.env.DATABASE_URL)('presence announcements the database failed', () => {
  let behind: AppBehindDatabaseProxy | undefined;
  let subject: TokenResponse;
  let watching: TestSocket;

  beforeAll(async () => {
    behind = await appBehindDatabaseProxy();
    const { wsPort } = await behind.app.listen();
    subject = await registerUser(behind.app);
    const watcher = await registerUser(behind.app);
    // The first verified token rebuilds the revocation marks from the database; after that a
    // heartbeat needs the database only for the announcement.
    expect((await getMe(behind.app, subject.access_token)).statusCode).toBe(200);
    watching = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, watcher.access_token);
  });

  afterAll(async () => {
    watching?.close();
    await behind?.close();
  });

  it('tells a subscriber the user came online once the database is back, though the heartbeat that did it answered 503', async () => {
    const { app, proxy } = behind as AppBehindDatabaseProxy;
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
