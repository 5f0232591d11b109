import { describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { insertBlock, lockPair } from '../../src/modules/social/social.repository.js';
import { transaction } from '../../src/platform/data-access.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { socialGraph } from '../social/graph.js';
import { expectProblem, gameServerCalls, reservationsOf, silentCommand } from './gameservers.js';

/**
 * A join of a friends server and its owner's block of the joiner, one against the other
 * (docs/gameservers.md, "Instance access"): the join's admission holds the pair's lock, shared,
 * as the block takes it alone, so one of the two commits first and the other sees it.
 */
describe('a join of a friends server against its owner blocking the joiner', () => {
  const { command } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_MAX_LIVE_PER_USER: 20,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
  });
  const { joinWith, expectStatus, stopServers } = gameServerCalls(app);
  const { befriend, users } = socialGraph(app);

  /** A friends server of the owner's in a new public world, and a friend of the owner's. */
  const friendsServer = async (owner: TokenResponse, friend: TokenResponse) => {
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    await befriend(owner, friend);
    const server = await joinWith(owner, worldId, { access: 'friends' });
    expect(server.statusCode, server.body).toBe(200);
    return { worldId, serverId: server.json().server_id as string };
  };

  it('keeps the place of a join committed before the block, and refuses the joins after it with 403 INSTANCE_RESTRICTED', async () => {
    const [owner, friend] = await users(2);
    const { worldId, serverId } = await friendsServer(owner, friend);
    expect((await joinWith(friend, worldId, { server_id: serverId })).statusCode).toBe(200);
    await expectStatus(204, 'PUT', `/api/blocks/${friend.user.id}`, owner);
    // The contract's block refuses what the access admits from then on; a place held stays.
    expect(await reservationsOf(app().db, friend.user.id)).toEqual([serverId]);
    expectProblem(await joinWith(friend, worldId, { server_id: serverId }), 403, 'INSTANCE_RESTRICTED');
    await stopServers(worldId);
  });

  // Two transactions at once: the embedded database serves one connection, where the join waits
  // for the pool instead of the lock.
  it.skipIf(!process.env.DATABASE_URL)(
    'waits for a block under way and, once it committed, refuses the join with 403 INSTANCE_RESTRICTED, writing nothing',
    async () => {
      const [owner, friend] = await users(2);
      const { worldId, serverId } = await friendsServer(owner, friend);
      const lockWaiters = async () => {
        const [row] = await queryRows<{ n: number }>(
          app().db,
          `select count(*)::integer as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
           where not l.granted and l.locktype = 'advisory' and a.datname = current_database()`,
        );
        return row?.n ?? 0;
      };
      let commit = () => {};
      let begun = () => {};
      const started = new Promise<void>((resolve) => {
        begun = resolve;
      });
      // The block's transaction as PUT /api/blocks runs it (the pair's lock, then the row), held open.
      const block = transaction(app().db.data, async (tx) => {
        await lockPair(tx, owner.user.id, friend.user.id);
        await insertBlock(tx, owner.user.id, friend.user.id, new Date());
        begun();
        await new Promise<void>((resolve) => {
          commit = resolve;
        });
      });
      await started;
      const join = joinWith(friend, worldId, { server_id: serverId });
      // The join's admission waits on the pair's lock: it cannot read the blocks before the block commits.
      await vi.waitFor(async () => expect(await lockWaiters()).toBe(1), { timeout: 15_000, interval: 20 });
      commit();
      await block;
      expectProblem(await join, 403, 'INSTANCE_RESTRICTED');
      expect(await reservationsOf(app().db, friend.user.id)).toEqual([]);
      await stopServers(worldId);
    },
  );
});
