import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe } from 'vitest';
import type { RedisTopology } from '../../src/platform/kv/index.js';
import { freePort, hasRedisServer, RedisServer } from './redis-server.js';
import { PROCESS_TEST_TIMEOUT_MS } from './service-process.js';

/**
 * Private Redis topologies for tests, on free ports in temp dirs: a Redis Cluster and a primary
 * with a replica watched by Sentinels. Each takes a second or two to start: start one per file.
 */

const run = promisify(execFile);

/** Polls `check` (every 50 ms) until it answers true, or throws `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Sends one command to 127.0.0.1:`port` on a connection of its own. */
async function ask(server: number | { port: number; password: string }, ...args: string[]): Promise<unknown> {
  const { port, password } = typeof server === 'number' ? { port: server, password: undefined } : server;
  const redis = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const [command, ...rest] = args as [string, ...string[]];
    return await redis.call(command, ...rest);
  } finally {
    redis.disconnect();
  }
}

const hostPorts = (servers: readonly RedisServer[]) => servers.map((s) => `127.0.0.1:${s.port}`).join(',');
const addresses = (servers: readonly RedisServer[]) =>
  servers.map((s) => ({ host: '127.0.0.1', port: s.port }));

const CLUSTER_PASSWORD = 'cluster-test-password';

/**
 * The command timeout of the contract tests' clients. They check what the store answers, not the
 * service's 500 ms bound, which a CI machine loaded by the rest of the suite has exceeded.
 */
export const CONTRACT_COMMAND_TIMEOUT_MS = 10_000;

/** A Redis Cluster of `masters` primaries without replicas, every slot assigned, behind a password. */
export class RedisClusterServers {
  private constructor(
    readonly masters: RedisServer[],
    private readonly dir: string,
  ) {}

  static async start(masters = 3): Promise<RedisClusterServers> {
    const dir = await mkdtemp(join(tmpdir(), 'atrium-redis-cluster-'));
    const servers = await Promise.all(
      Array.from({ length: masters }, async (_, i) =>
        RedisServer.start({
          args: [
            ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${i}.conf`)],
            // A free bus port of its own: the default, the port + 10000, may be taken or past 65535.
            ...['--cluster-port', String(await freePort())],
            // A password keeps out strangers: a client elsewhere on the machine still retrying a
            // port that is now this node's would otherwise write keys into it.
            ...['--requirepass', CLUSTER_PASSWORD],
          ],
        }),
      ),
    );
    const cluster = new RedisClusterServers(servers, dir);
    try {
      const nodes = servers.map((s) => `127.0.0.1:${s.port}`);
      const create = ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'];
      await run('redis-cli', ['--no-auth-warning', '-a', CLUSTER_PASSWORD, ...create]).catch(
        (error: { stdout?: string }) => {
          throw new Error(`redis-cli --cluster create failed:\n${error.stdout ?? error}`);
        },
      );
      for (const server of servers) {
        await until('the cluster is ok', async () =>
          String(await ask({ port: server.port, password: CLUSTER_PASSWORD }, 'CLUSTER', 'INFO')).includes(
            'cluster_state:ok',
          ),
        );
      }
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** The value of REDIS_CLUSTER_NODES. */
  get nodes(): string {
    return hostPorts(this.masters);
  }

  /** What connectRedis takes for it. */
  get topology(): RedisTopology {
    return { kind: 'cluster', nodes: addresses(this.masters), password: CLUSTER_PASSWORD };
  }

  /** The service's settings for it. */
  get settings(): { REDIS_CLUSTER_NODES: string; REDIS_PASSWORD: string } {
    return { REDIS_CLUSTER_NODES: this.nodes, REDIS_PASSWORD: CLUSTER_PASSWORD };
  }

  /**
   * Closes every pub/sub connection of the primary serving the hash slot of `hashTag`, as that
   * primary restarting would; resolves once it has. Its subscribers reconnect by themselves.
   */
  async cutSubscribers(hashTag: string): Promise<void> {
    const auth = (server: RedisServer) => ({ port: server.port, password: CLUSTER_PASSWORD });
    const first = this.masters[0] as RedisServer;
    const slot = Number(await ask(auth(first), 'CLUSTER', 'KEYSLOT', hashTag));
    const ranges = (await ask(auth(first), 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const owner = ranges.find(([from, to]) => from <= slot && slot <= to)?.[2][1];
    const server = this.masters.find((master) => master.port === owner);
    if (!server) throw new Error(`no primary serves slot ${slot}`);
    await ask(auth(server), 'CLIENT', 'KILL', 'TYPE', 'pubsub');
  }

  async stop(): Promise<void> {
    await Promise.all(this.masters.map((server) => server.stop()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A primary, one replica and three Sentinels (quorum 2) watching them under `name`. A primary that
 * stops answering is declared down after a second and its replica promoted a moment later.
 */
export class RedisSentinelServers {
  private constructor(
    readonly name: string,
    readonly primary: RedisServer,
    readonly replica: RedisServer,
    readonly sentinels: RedisServer[],
    private readonly dir: string,
  ) {}

  /**
   * `failover: false` skips waiting until the Sentinels could fail over (their discovery of the
   * replica and of each other takes a few seconds), for tests that only need them to name the primary.
   */
  static async start({ name = 'atrium', failover = true } = {}): Promise<RedisSentinelServers> {
    const dir = await mkdtemp(join(tmpdir(), 'atrium-redis-sentinel-'));
    const primary = await RedisServer.start();
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    const sentinels: RedisServer[] = [];
    const set = new RedisSentinelServers(name, primary, replica, sentinels, dir);
    try {
      for (let i = 0; i < 3; i++) {
        const configFile = join(dir, `sentinel-${i}.conf`);
        await writeFile(
          configFile,
          [
            `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
            `sentinel down-after-milliseconds ${name} 1000`,
            `sentinel failover-timeout ${name} 5000`,
            '',
          ].join('\n'),
        );
        sentinels.push(await RedisServer.start({ configFile, args: ['--sentinel'], readyLine: '+monitor' }));
      }
      if (!failover) return set;
      await until('the replica is in sync', async () =>
        String(await ask(replica.port, 'INFO', 'replication')).includes('master_link_status:up'),
      );
      // A failover needs every Sentinel to know the replica and the other Sentinels (hello messages).
      for (const sentinel of sentinels) {
        await until('the Sentinels know each other and the replica', async () => {
          const replicas = (await ask(sentinel.port, 'SENTINEL', 'REPLICAS', name)) as unknown[];
          const peers = (await ask(sentinel.port, 'SENTINEL', 'SENTINELS', name)) as unknown[];
          return replicas.length === 1 && peers.length === 2;
        });
      }
    } catch (error) {
      await set.stop();
      throw error;
    }
    return set;
  }

  /** The value of REDIS_SENTINELS. */
  get sentinelList(): string {
    return hostPorts(this.sentinels);
  }

  /** What connectRedis takes for it. */
  get topology(): RedisTopology {
    return { kind: 'sentinel', sentinels: addresses(this.sentinels), name: this.name };
  }

  /** The service's settings for it. */
  get settings(): { REDIS_SENTINELS: string; REDIS_SENTINEL_NAME: string } {
    return { REDIS_SENTINELS: this.sentinelList, REDIS_SENTINEL_NAME: this.name };
  }

  /** Resolves once the Sentinels name the replica as the primary (after the primary was killed). */
  async promoted(timeoutMs = 30_000): Promise<void> {
    await until(
      'the Sentinels promote the replica',
      async () => {
        const address = (await ask(
          this.sentinels[0]?.port ?? 0,
          'SENTINEL',
          'GET-MASTER-ADDR-BY-NAME',
          this.name,
        )) as string[] | null;
        return address?.[1] === String(this.replica.port);
      },
      timeoutMs,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([this.primary, this.replica, ...this.sentinels].map((server) => server.stop()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A running topology, as connectRedis (`topology`) and the service (`settings`) take it. */
export interface RedisServers {
  topology: RedisTopology;
  settings: Record<string, string>;
  /** On a Cluster: RedisClusterServers.cutSubscribers. */
  cutSubscribers?(hashTag: string): Promise<void>;
}

/**
 * Declares `body` twice, on a private Redis Cluster and on a private Sentinel-watched primary, each
 * started once for its block; call `servers()` inside hooks and tests. Skipped without a
 * redis-server binary.
 */
export function describeOnRedisTopologies(body: (servers: () => RedisServers) => void): void {
  const topologies = [
    { name: 'a Redis Cluster', start: () => RedisClusterServers.start() },
    { name: 'Redis Sentinel', start: () => RedisSentinelServers.start({ failover: false }) },
  ];
  for (const { name, start } of topologies) {
    describe.skipIf(!hasRedisServer())(`on ${name}`, () => {
      let servers: Awaited<ReturnType<typeof start>> | undefined;
      // Six processes to start (and a cluster to form) on a machine the rest of the suite loads.
      beforeAll(async () => {
        servers = await start();
      }, PROCESS_TEST_TIMEOUT_MS);
      afterAll(async () => {
        await servers?.stop();
      }, PROCESS_TEST_TIMEOUT_MS);
      body(() => {
        if (!servers) throw new Error('the Redis servers start in beforeAll');
        return servers;
      });
    });
  }
}
