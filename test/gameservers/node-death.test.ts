import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import type { App } from '../../src/app.js';
import { hasSharedRedis } from '../../src/config.js';
import { insertServer, stopServersOfNodes } from '../../src/modules/gameservers/gameservers.repository.js';
import { newServerToken } from '../../src/modules/gameservers/server-tokens.js';
import { nodeLeaseKey } from '../../src/modules/presence/node-lease.js';
import { transaction } from '../../src/platform/data-access.js';
import { newId } from '../../src/platform/ids.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';
import { registerUser } from '../helpers/accounts.js';
import {
  buildCheckedApp,
  type ConfigOverrides,
  testConfig,
  testModules,
  useTestApp,
} from '../helpers/app.js';
import { createTestDatabase, queryRows, rowLockWaiters } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { request, TestSocket } from '../helpers/ws-client.js';
import { gameServerCalls, launchesOf, reservationsOf, silentCommand } from './gameservers.js';

const NODE_LEASE_SECONDS = 1;
const NODE_DIED = 'The node that ran it stopped: its node lease lapsed.';

type Node = App & { wsUrl: string };

/**
 * Nodes on one database and one DATA_DIR (one signing key), each on the KV store it names: a
 * Redis namespace of its own, or one in-process store per name in embedded mode.
 */
async function nodesOnOneDatabase(overrides: ConfigOverrides) {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-gs-nodes-'));
  const stores = new Map<string, MemoryKv>();
  const apps: App[] = [];
  return {
    async node(store: string): Promise<Node> {
      const config = testConfig(dataDir, testDb, {
        ...overrides,
        REDIS_KEY_PREFIX: `test:${testDb.db.kind}:${basename(dataDir)}:${store}:`,
      });
      const kv = hasSharedRedis(config) ? undefined : (stores.get(store) ?? new MemoryKv());
      if (kv) stores.set(store, kv);
      const app = await buildCheckedApp(config, {
        modules: testModules,
        db: testDb.db,
        ...(kv ? { kv } : {}),
      });
      apps.push(app);
      const { wsPort } = await app.listen();
      return Object.assign(app, { wsUrl: `ws://127.0.0.1:${wsPort}/ws` });
    },
    async close() {
      for (const app of apps) await app.close();
      for (const kv of stores.values()) await kv.close();
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a game server whose node died', () => {
  const { command, dir } = silentCommand();
  let nodes: Awaited<ReturnType<typeof nodesOnOneDatabase>> | undefined;
  let pid: number | undefined;
  afterAll(async () => {
    // Should its process have outlived its node, it goes with the test.
    if (pid !== undefined && isRunning(pid)) process.kill(pid, 'SIGKILL');
    await nodes?.close();
  });

  it('is stopped by a surviving node once the lease lapses: its token answers 401, its sockets close, and joins go to another server', {
    timeout: 90_000,
  }, async () => {
    nodes = await nodesOnOneDatabase({ GAMESERVER_COMMAND: command, NODE_LEASE_SECONDS });
    // A node cannot be killed inside the test's process: node A runs on a KV store of its own, and
    // the test keeps A's lease in the survivors' store, renewed while A lives and then left to lapse,
    // which is all the survivors see of a node killed with -9 (as test/presence/node-lease.test.ts
    // leaves a dead node's records).
    const a = await nodes.node('a');
    const b = await nodes.node('survivors');
    const leaseOfA = nodeLeaseKey(a.modules.presence.nodeId);
    await b.kv.set(leaseOfA, 'alive', { ttlMs: 600_000 });
    const [owner, player] = [await registerUser(a), await registerUser(a)];
    const { worldId } = await createWorld(a, owner.access_token, { visibility: 'public' });
    const onA = gameServerCalls(() => a);
    const onB = gameServerCalls(() => b);
    const server = await onA.settled(owner, (await onA.spawn(owner, worldId)).server_id);
    expect(server.status).toBe('ready');
    const launch = launchesOf(dir, worldId)[0] as Record<string, string>;
    pid = Number(launch.pid);
    const token = launch['server-token'] as string;
    expect(await onB.join(player, worldId)).toMatchObject({
      server_id: server.server_id,
      address: server.address,
    });
    const socket = await TestSocket.connect(b.wsUrl);
    try {
      expect(await request(socket, 'auth', { token })).toMatchObject({ t: 'ack' });

      // A's last renewal: its lease lapses a lease later.
      await b.kv.set(leaseOfA, 'alive', { ttlMs: NODE_LEASE_SECONDS * 1000 });
      await vi.waitFor(async () => expect((await onB.get(owner, server.server_id)).status).toBe('stopped'), {
        timeout: 30_000,
        interval: 100,
      });
      expect(await onB.get(owner, server.server_id)).toMatchObject({ error: NODE_DIED, players: 0 });
      expect((await onB.internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
      expect((await socket.closed).code).toBe(CloseCode.SESSION_ENDED);
    } finally {
      socket.close();
    }

    // Node A goes for good, and its process with it.
    await a.close();
    await vi.waitFor(() => expect(isRunning(pid as number)).toBe(false), { timeout: 10_000 });
    const joined = await onB.join(player, worldId);
    expect(joined.server_id).not.toBe(server.server_id);
    expect((await onB.get(owner, joined.server_id)).status).toBe('ready');
    expect(await reservationsOf(b.db, player.user.id)).toEqual([joined.server_id]);
  });
});

describe("the sweep of dead nodes' servers", () => {
  const app = useTestApp();
  const data = () => app().db.data;

  /** A starting server of the world as a spawn records it, supervised by `node` (null: on Agones). */
  const recordServer = (worldId: string, userId: string, node: string | null, createdAt: Date) =>
    insertServer(
      data(),
      {
        id: newId(),
        world_id: worldId,
        requested_by: userId,
        access: 'public',
        backend: node ? 'local' : 'agones',
        max_players: 32,
        created_at: createdAt,
        ready_deadline: new Date(Date.now() + 3_600_000),
        node_id: node,
      },
      newServerToken().hash,
    );
  const statusesOf = async (worldId: string) =>
    Object.fromEntries(
      (
        await queryRows<{ id: string; status: string }>(
          app().db,
          'select id, status::text as status from game_servers where world_id = ?',
          [worldId],
        )
      ).map((row) => [row.id, row.status]),
    );

  it("stops the servers of a node whose lease lapsed, once they are a lease old, and no other node's nor Agones'", async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const liveNode = randomUUID();
    await app().kv.set(nodeLeaseKey(liveNode), 'alive', { ttlMs: 600_000 });
    const deadNode = randomUUID();
    const now = new Date();
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const dead = await recordServer(worldId, owner.user.id, deadNode, hourAgo);
    const young = await recordServer(worldId, owner.user.id, deadNode, now);
    const kept = [
      await recordServer(worldId, owner.user.id, liveNode, hourAgo),
      await recordServer(worldId, owner.user.id, app().modules.presence.nodeId, hourAgo),
      await recordServer(worldId, owner.user.id, null, hourAgo),
    ];
    await app().modules.gameservers.stopOrphaned(now);
    expect(await statusesOf(worldId)).toEqual({
      [dead.id]: 'stopped',
      [young.id]: 'starting',
      ...Object.fromEntries(kept.map((row) => [row.id, 'starting'])),
    });
    // Recorded now, it is a lease old (NODE_LEASE_SECONDS, 10 s here) 11 s from now.
    await app().modules.gameservers.stopOrphaned(new Date(now.getTime() + 11_000));
    expect((await statusesOf(worldId))[young.id]).toBe('stopped');
  });

  it('stops each server once when several nodes sweep at once', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const deadNode = randomUUID();
    // Recorded now, so the app's own sweep leaves it for a lease: only the two below compete.
    const server = await recordServer(worldId, owner.user.id, deadNode, new Date());
    const outcome = { error: NODE_DIED, at: new Date(), recordedBefore: new Date(Date.now() + 60_000) };
    let release: () => void = () => undefined;
    let swept: () => void = () => undefined;
    const hasSwept = new Promise<void>((resolve) => {
      swept = resolve;
    });
    const first = transaction(data(), async (tx) => {
      const rows = await stopServersOfNodes(tx, [deadNode], outcome);
      swept();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return rows;
    });
    await hasSwept;
    const second = stopServersOfNodes(data(), [deadNode], outcome);
    if (app().db.kind === 'postgres') await expect.poll(() => rowLockWaiters(app().db)).toBeGreaterThan(0);
    release();
    expect((await first).map((row) => row.id)).toEqual([server.id]);
    expect(await second).toEqual([]);
  });
});
