import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, launchesOf, reservationsOf, silentCommand } from './gameservers.js';

/**
 * What several nodes share of the game-server limits (docs/gameservers.md): one join reservation
 * per user, the spawn rate, and idle servers stopped once.
 */
describe('game server limits across two nodes', () => {
  const { command, dir } = silentCommand();
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, {
      GAMESERVER_COMMAND: command,
      GAMESERVER_MAX_PLAYERS: 2,
      GAMESERVER_IDLE_STOP_SECONDS: 60,
      GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 2,
    });
  });
  afterAll(() => cluster?.close());
  const a = () => cluster.nodes[0] as TestCluster['nodes'][number];
  const b = () => cluster.nodes[1] as TestCluster['nodes'][number];

  it('counts thirty joins of one user, half through each node, as one player on one server', async () => {
    const owner = await registerUser(a());
    const { worldId } = await createWorld(a(), owner.access_token, { visibility: 'public' });
    const player = await registerUser(a());
    const joins = await Promise.all(
      Array.from({ length: 30 }, (_, i) => gameServerCalls(i % 2 ? b : a).join(player, worldId)),
    );
    const serverId = joins[0]?.server_id as string;
    expect(new Set(joins.map((answer) => answer.server_id))).toEqual(new Set([serverId]));
    expect(launchesOf(dir, worldId)).toHaveLength(1);
    expect((await gameServerCalls(b).get(owner, serverId)).players).toBe(1);
    expect(await reservationsOf(a().db, player.user.id)).toEqual([serverId]);
  });

  // The embedded mode is one process: nodes share the rate through Redis.
  it.skipIf(!process.env.REDIS_URL)('shares the spawn rate between nodes through Redis', async () => {
    const owner = await registerUser(a());
    const { worldId } = await createWorld(a(), owner.access_token);
    for (const node of [a, b]) {
      const calls = gameServerCalls(node);
      const server = await calls.spawn(owner, worldId);
      await calls.expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
    }
    const refused = await gameServerCalls(a).expectStatus(
      429,
      'POST',
      `/api/worlds/${worldId}/servers`,
      owner,
    );
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('stops an idle server once, whichever nodes sweep, only after its last reservation has been over for the idle time; the node running it stops its process', async () => {
    const [owner, player] = [await registerUser(a()), await registerUser(a())];
    const { worldId } = await createWorld(a(), owner.access_token, { visibility: 'public' });
    const onA = gameServerCalls(a);
    const server = await onA.settled(owner, (await onA.spawn(owner, worldId)).server_id);
    await gameServerCalls(b).join(player, worldId);
    const joinedAt = Date.now();
    // Both nodes sweep at once, at a chosen time (their own timers sweep at the present).
    const sweep = async (secondsAfterJoin: number) => {
      const at = new Date(joinedAt + secondsAfterJoin * 1000);
      const ended = await Promise.all([a(), b()].map((node) => node.modules.gameservers.stopIdle(at)));
      return ended.flat().filter((id) => id === server.server_id);
    };
    // The reservation lasts 60 s: 100 s after the join, it was live less than 60 s ago.
    expect(await sweep(100)).toEqual([]);
    expect((await onA.get(owner, server.server_id)).status).toBe('ready');
    expect(await sweep(121)).toEqual([server.server_id]);
    expect(await onA.get(owner, server.server_id)).toMatchObject({
      status: 'stopped',
      error: 'The server had no players and no join reservation for 60 s.',
    });
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    expect((await onA.internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    await vi.waitFor(
      () => expect(a().modules.gameservers.spawner.runningIds()).not.toContain(server.server_id),
      { timeout: 10_000 },
    );
  });
});
