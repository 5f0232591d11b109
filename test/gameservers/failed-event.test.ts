import { beforeAll, describe, expect, it, vi } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import type { ConfigOverrides } from '../helpers/app.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, serversOfWorlds } from './gameservers.js';

/**
 * `gameserver.failed`, recorded in the transaction that makes a spawn `failed`, whichever path
 * does: its deadline (the node's timer, a sweep by a read or a join), a crash, a start error.
 * Read from the outbox's table (test/helpers/domain-events.ts): a module consumes the type, and
 * the app's outbox is stopped, so what was recorded stays there.
 */

const SERVER_FAILED = 'gameserver.failed';
const node = JSON.stringify;

/** A test app whose failures are recorded and kept, and the calls the tests make on it. */
function appRecordingFailures(overrides: ConfigOverrides) {
  const app = useTestApp(overrides, { modules: [...testModules, consumerOf(SERVER_FAILED)] });
  beforeAll(async () => {
    await app().outbox.stop();
  });
  /** The events recorded for one server. */
  const { recorded } = recordedEvents(app);
  const recordedFor = async (serverId: string) =>
    (await recorded(SERVER_FAILED)).filter((event) => event.server.server_id === serverId);
  /** Waits until an event was recorded for the server, with no request asking. */
  const awaitRecorded = (serverId: string) =>
    vi.waitFor(
      async () => {
        const events = await recordedFor(serverId);
        expect(events).not.toEqual([]);
        return events;
      },
      { timeout: 15_000, interval: 50 },
    );
  return { app, recordedFor, awaitRecorded, ...gameServerCalls(app) };
}

describe('a game server that never reports ready', () => {
  const { app, recordedFor, awaitRecorded, spawn, get, expectStatus } = appRecordingFailures({
    GAMESERVER_COMMAND: node([process.execPath, '-e', 'setInterval(() => {}, 1000)', '--']),
    GAMESERVER_READY_TIMEOUT_MS: 1_500,
  });
  /** A server of a new world of a new owner, its deadline passed unseen (as when its node is gone). */
  const overdueServer = async (visibility?: 'public') => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, visibility ? { visibility } : {});
    const started = await spawn(owner, worldId);
    await queryRows(
      app().db,
      "update game_servers set ready_deadline = now() - interval '1 second' where id = ?",
      [started.server_id],
    );
    return { owner, worldId, started };
  };

  it('is recorded when the server misses its deadline, with the server as GET /api/servers/{id} shows it', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    const events = await awaitRecorded(started.server_id);
    const shown = await get(owner, started.server_id);
    expect(shown).toMatchObject({
      status: 'failed',
      error: 'The server did not report ready within 1500 ms.',
    });
    expect(events).toEqual([{ server: shown }]);
  });

  it('is recorded once when a read finds the server past its deadline', async () => {
    const { owner, started } = await overdueServer();
    const shown = await get(owner, started.server_id);
    expect(shown.status).toBe('failed');
    expect(await recordedFor(started.server_id)).toEqual([{ server: shown }]);
  });

  it('is recorded once when a join finds the server past its deadline', async () => {
    const { owner, worldId, started } = await overdueServer('public');
    // The join fails the overdue server, then starts one of its own, which never gets ready either.
    await expectStatus(503, 'POST', `/api/worlds/${worldId}/join`, owner);
    const shown = await get(owner, started.server_id);
    expect(shown.status).toBe('failed');
    expect(await recordedFor(started.server_id)).toEqual([{ server: shown }]);
  });

  it('is not recorded for a server that is stopped', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    await expectStatus(204, 'DELETE', `/api/servers/${started.server_id}`, owner);
    expect((await get(owner, started.server_id)).status).toBe('stopped');
    expect(await recordedFor(started.server_id)).toEqual([]);
  });
});

describe('a crashing game server', () => {
  const { app, awaitRecorded, spawn, get } = appRecordingFailures({
    GAMESERVER_COMMAND: node([process.execPath, '-e', 'setTimeout(() => process.exit(3), 200)', '--']),
  });

  it('is recorded when the server exits non-zero', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    const events = await awaitRecorded(started.server_id);
    const shown = await get(owner, started.server_id);
    expect(shown).toMatchObject({ status: 'failed', error: 'The game server exited with code 3.' });
    expect(events).toEqual([{ server: shown }]);
  });
});

describe('a game server that cannot be started', () => {
  const { app, recordedFor, get, expectStatus } = appRecordingFailures({
    GAMESERVER_COMMAND: node(['/nonexistent/atrium-game-server']),
  });

  it('is recorded with the failure the spawn answered', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const refused = await expectStatus(503, 'POST', `/api/worlds/${worldId}/servers`, owner);
    expect(refused.json()).toMatchObject({ code: 'GAMESERVER_UNAVAILABLE' });
    const [serverId] = await serversOfWorlds(app().db, [worldId]);
    const shown = await get(owner, serverId as string);
    expect(shown).toMatchObject({
      status: 'failed',
      error: 'The game server command could not be run: /nonexistent/atrium-game-server.',
    });
    expect(await recordedFor(shown.server_id)).toEqual([{ server: shown }]);
  });
});
