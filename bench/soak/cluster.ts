import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PostgresServer } from '../../test/helpers/postgres-server.js';
import { freePort, RedisServer } from '../../test/helpers/redis-server.js';
import { stopChild } from '../realtime/servers.js';
import { type RunningService, startService } from '../service.js';

/**
 * The soak's deployment: NODES service processes on fixed ports, sharing a private PostgreSQL, a
 * private Redis and one DATA_DIR (the signing keys), each of which the chaos loop may crash and
 * start again. Ports stay fixed across restarts so that clients keep one list of addresses.
 */

export const NODES = 3;

export interface Node {
  index: number;
  httpPort: number;
  wsPort: number;
  /** The running process; undefined while the node is down. */
  service: RunningService | undefined;
}

/** Settings of every node: long-lived tokens, limits above the soak's load, the service's defaults otherwise. */
const SOAK_ENV = {
  ACCESS_TOKEN_TTL_SECONDS: '86400',
  DM_RATE_LIMIT_COUNT: '100000',
  WS_AUTH_TIMEOUT_MS: '120000',
  MIGRATE_ON_START: 'false',
};

export class Cluster {
  readonly nodes: Node[] = [];
  /** Called with every line a node logs (its JSON log on stdout). */
  onLogLine: (node: Node, line: string) => void = () => undefined;

  private constructor(
    readonly postgres: PostgresServer,
    readonly redis: RedisServer,
    readonly dataDir: string,
  ) {}

  static async start(): Promise<Cluster> {
    const postgres = await PostgresServer.start();
    const redis = await RedisServer.start();
    const cluster = new Cluster(postgres, redis, await mkdtemp(join(tmpdir(), 'atrium-soak-')));
    for (let index = 0; index < NODES; index++)
      cluster.nodes.push({ index, httpPort: await freePort(), wsPort: await freePort(), service: undefined });
    return cluster;
  }

  /** What the nodes need besides their ports (also what the seeding connects with). */
  get env(): Record<string, string> {
    return { DATABASE_URL: this.postgres.url, REDIS_URL: this.redis.url, DATA_DIR: this.dataDir };
  }

  async startNode(node: Node): Promise<void> {
    node.service = await startService({
      ...SOAK_ENV,
      ...this.env,
      HTTP_PORT: String(node.httpPort),
      WS_PORT: String(node.wsPort),
    });
    const { stdout } = node.service.child;
    if (stdout) createInterface({ input: stdout }).on('line', (line) => this.onLogLine(node, line));
  }

  /** kill -9: no shutdown, sockets cut, the node's lease left to lapse. */
  async killNode(node: Node): Promise<void> {
    const child = node.service?.child;
    node.service = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  up(): Node[] {
    return this.nodes.filter((node) => node.service);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => (node.service ? stopChild(node.service.child) : undefined)));
    await this.redis.stop();
    await this.postgres.destroy();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
