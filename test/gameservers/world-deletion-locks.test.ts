import { describe, expect, it, vi } from 'vitest';
import { lockUserSpawns } from '../../src/modules/gameservers/gameservers.repository.js';
import { type DataAccess, transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { lockWaiters, queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { partyCalls } from '../parties/parties.js';
import {
  gameServerCalls,
  launchesOf,
  manualCommand,
  reservationsOf,
  serversOfWorlds,
} from './gameservers.js';

/**
 * A world's deletion meeting game-server joins on Postgres, each stopped by a lock the test holds
 * where the two used to wait for each other until Postgres cancelled one as a deadlock, answered
 * 500. A join locks the world's servers, then needs the world's row for its new server or its
 * visit; a party placed elsewhere locks its members' reservations, then the server they leave;
 * the deletion locked the world's row, then the servers and reservations it cascades to.
 * PGlite runs one session, where nothing waits for a row.
 */
describe.skipIf(!process.env.DATABASE_URL)("a world's deletion racing its game-server joins", () => {
  const { command, dir } = manualCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    // Deadlines are the tests' to pass: the node's own timer must not end a starting server first.
    GAMESERVER_READY_TIMEOUT_MS: 3_600_000,
  });
  const { call, spawn, settled, join, partyJoin, readyAll } = gameServerCalls(app);
  const { partyOf } = partyCalls(app);

  /** Runs `lock` in a transaction left open until the answered function is called, holding what it locked. */
  async function holding(lock: (tx: DataAccess) => Promise<unknown>): Promise<() => Promise<void>> {
    let release: () => void = () => undefined;
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const held = transaction(app().db.data, async (tx) => {
      await lock(tx);
      locked();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await Promise.race([isLocked, held]);
    return async () => {
      release();
      await held;
    };
  }

  /** Waits until `count` sessions of the app's database wait for a lock. */
  const waitersReach = (count: number) =>
    expect.poll(() => lockWaiters(app().db), { timeout: 30_000 }).toBeGreaterThanOrEqual(count);

  it('waits for a join of the world that failed an overdue server there, and the join answers 404, never 500', {
    timeout: 120_000,
  }, async () => {
    const owner = await registerUser(app());
    const player = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    // A starting server past its deadline: the join's turn fails it, which locks its row.
    const overdue = await spawn(owner, worldId);
    await queryRows(
      app().db,
      `update game_servers set ready_deadline = now() - interval '1 minute' where id = ?`,
      [overdue.server_id],
    );
    // The join stops where it starts a server for its player, after the overdue one failed and
    // before the new server's row, which needs the world's.
    const releaseSpawns = await holding((tx) => lockUserSpawns(tx, player.user.id));
    const joining = call('POST', `/api/worlds/${worldId}/join`, player);
    await waitersReach(1);
    const deleting = call('DELETE', `/api/worlds/${worldId}`, owner);
    await waitersReach(2);
    await releaseSpawns();

    expect((await deleting).statusCode).toBe(204);
    const joined = await joining;
    expect(joined.statusCode, joined.body).toBe(404);
    expect(joined.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(await serversOfWorlds(app().db, [worldId])).toEqual([]);
    expect(await reservationsOf(app().db, player.user.id)).toEqual([]);
  });

  it("waits for a party placed in another world that moves its leader's reservation off the world's server, and both succeed", {
    timeout: 120_000,
  }, async () => {
    const owner = await registerUser(app());
    const leader = await registerUser(app());
    const readyServerOf = async (worldId: string) => {
      const { server_id } = await spawn(owner, worldId);
      await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(1), { timeout: 15_000 });
      await readyAll(dir, worldId);
      await settled(owner, server_id);
      return server_id;
    };
    const deleted = (await createWorld(app(), owner.access_token, { visibility: 'public' })).worldId;
    const other = (await createWorld(app(), owner.access_token, { visibility: 'public' })).worldId;
    const leftServer = await readyServerOf(deleted);
    const nextServer = await readyServerOf(other);
    expect((await join(leader, deleted)).server_id).toBe(leftServer);
    await partyOf(leader, []);
    // The server the leader leaves stops the deletion where it deletes it, and then the placement
    // where it marks it left, holding the leader's reservation, which the deletion cascades to.
    const releaseServer = await holding((tx) =>
      executeBound(tx, 'select id from game_servers where id = $1 for no key update', [leftServer]),
    );
    const deleting = call('DELETE', `/api/worlds/${deleted}`, owner);
    await waitersReach(1);
    const placing = partyJoin(leader, other);
    await waitersReach(2);
    await releaseServer();

    expect((await deleting).statusCode).toBe(204);
    const placed = await placing;
    expect(placed.statusCode, placed.body).toBe(200);
    expect(placed.json()).toMatchObject({ server_id: nextServer });
    expect(await reservationsOf(app().db, leader.user.id)).toEqual([nextServer]);
    expect(await serversOfWorlds(app().db, [deleted])).toEqual([]);
  });
});
