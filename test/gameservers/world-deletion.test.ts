import { describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { rowLockWaiters } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { request, TestSocket } from '../helpers/ws-client.js';
import {
  gameServerCalls,
  launchesOf,
  reservationsOf,
  serversOfWorlds,
  silentCommand,
} from './gameservers.js';

const { command, dir } = silentCommand();
// Limits out of the way: the spawns here race a deletion, not each other.
const app = useTestApp({
  GAMESERVER_COMMAND: command,
  GAMESERVER_MAX_LIVE_PER_USER: 100,
  GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 1000,
  GAMESERVER_MAX_RUNNING: 64,
});
const { call, spawn, settled, internal, expectStatus } = gameServerCalls(app);

describe("a deleted world's game servers", () => {
  it('lose their sockets with 4403 once told the stream ended, and their token answers 401', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    const socket = await TestSocket.connect(app().wsUrl);
    try {
      expect(await request(socket, 'auth', { token })).toMatchObject({ t: 'ack' });
      expect(await request(socket, 'chunks.subscribe', { world_id: worldId })).toMatchObject({ t: 'ack' });
      await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
      await socket.next((f) => f.t === 'chunks.stream_ended');
      expect((await socket.closed).code).toBe(CloseCode.SESSION_ENDED);
      expect((await internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    } finally {
      socket.close();
    }
  });
});

/**
 * Deletes the world in a transaction left open until `release`: the spawns and joins started
 * meanwhile read the world, then wait for its row (Postgres) or for the one connection (PGlite).
 */
async function holdDeletion(worldId: string): Promise<{ release(): Promise<void> }> {
  let release: () => void = () => undefined;
  let deleted: () => void = () => undefined;
  const isDeleted = new Promise<void>((resolve) => {
    deleted = resolve;
  });
  const deletion = transaction(app().db.data, async (tx) => {
    await executeBound(tx, 'delete from worlds where id = $1', [worldId]);
    deleted();
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  await Promise.race([isDeleted, deletion]);
  return {
    release: async () => {
      release();
      await deletion;
    },
  };
}

describe('a spawn or a join racing the deletion of its world', () => {
  it('answers its success or 404 NOT_FOUND, never 500, and one that loses leaves no server, reservation or process', {
    timeout: 180_000,
  }, async () => {
    const owner = await registerUser(app());
    const players = [await registerUser(app()), await registerUser(app()), await registerUser(app())];
    const rounds = [
      { held: true, withServer: false },
      { held: true, withServer: true },
      { held: true, withServer: false },
      { held: true, withServer: true },
      { held: false, withServer: false },
      { held: false, withServer: true },
    ];
    for (const { held, withServer } of rounds) {
      const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
      // With a ready server, a join reserves a place on it; without, it starts one.
      if (withServer) await settled(owner, (await spawn(owner, worldId)).server_id);
      const launchedBefore = launchesOf(dir, worldId).length;
      const deletion = held ? await holdDeletion(worldId) : undefined;
      const spawns = players.map(() => call('POST', `/api/worlds/${worldId}/servers`, owner));
      const joins = players.map((player) => call('POST', `/api/worlds/${worldId}/join`, player));
      const deleted = deletion ? undefined : call('DELETE', `/api/worlds/${worldId}`, owner);
      // A spawn and a join (the others queue behind them) wait for the world's row, then lose.
      if (deletion && app().db.kind === 'postgres')
        await expect.poll(() => rowLockWaiters(app().db), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
      await deletion?.release();
      if (deleted) expect((await deleted).statusCode).toBe(204);
      const outcomes = (await Promise.allSettled([...spawns, ...joins])).map((answer, i) => ({
        racer: i < spawns.length ? 'spawn' : 'join',
        status: answer.status === 'fulfilled' ? answer.value.statusCode : String(answer.reason),
        body: answer.status === 'fulfilled' ? (answer.value.json() as { code?: string }) : undefined,
      }));
      for (const outcome of outcomes) {
        const success = outcome.racer === 'spawn' ? 202 : 200;
        expect([success, 404], JSON.stringify(outcome)).toContain(outcome.status);
        if (outcome.status === 404) expect(outcome.body).toMatchObject({ code: 'NOT_FOUND' });
      }
      if (held) {
        expect(outcomes.map((outcome) => outcome.status)).toEqual(outcomes.map(() => 404));
        expect(launchesOf(dir, worldId)).toHaveLength(launchedBefore);
      }
      expect(await serversOfWorlds(app().db, [worldId])).toEqual([]);
      for (const player of players) expect(await reservationsOf(app().db, player.user.id)).toEqual([]);
    }
    // The processes of the deleted worlds' servers are stopped (at the latest by the reconcile).
    await vi.waitFor(() => expect(app().modules.gameservers.spawner.runningIds()).toEqual([]), {
      timeout: 30_000,
    });
  });

  it('answers 404 NOT_FOUND to a spawn after the deletion, and records nothing', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    const refused = await expectStatus(404, 'POST', `/api/worlds/${worldId}/servers`, owner);
    expect(refused.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(await serversOfWorlds(app().db, [worldId])).toEqual([]);
    expect(launchesOf(dir, worldId)).toEqual([]);
  });
});
