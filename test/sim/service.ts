import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { npmStartArgs } from '../../bench/service.js';
import { adminQuery, withDatabase } from '../helpers/global-setup.js';
import { freePort } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The real service as `npm start` runs it, in a child process, on a Postgres database of its own
 * that this creates, migrates and drops, reached through a TCP proxy so that the simulation can
 * cut every database connection; Redis from REDIS_URL when set (under a key prefix of its own),
 * else the in-process KV. It can be killed with SIGKILL and started again on the same ports.
 */

/** The settings the simulation runs the service with: holds short enough to end during a run. */
export const SIM_SETTINGS = {
  ECONOMY_FEE_BPS: '3000',
  ECONOMY_HOLD_SECONDS: '2',
  ECONOMY_RELEASE_INTERVAL_SECONDS: '1',
  ECONOMY_PAYOUT_MINIMUM: '50',
  // Limits far above what the driver sends: a 429 would be the driver's pace, not the ledger's rule.
  ECONOMY_CREATE_RATE_LIMIT_COUNT: '100000',
  ECONOMY_CREATE_RATE_LIMIT_WINDOW_SECONDS: '1',
  ECONOMY_PURCHASE_RATE_LIMIT_COUNT: '100000',
  ECONOMY_PURCHASE_RATE_LIMIT_WINDOW_SECONDS: '1',
  REGISTER_IP_MAX_ATTEMPTS: '1000',
  LOGIN_IP_MAX_ATTEMPTS: '1000',
  ACCESS_TOKEN_TTL_SECONDS: '86400',
};

const READY_TIMEOUT_MS = 120_000;
const CLI_TIMEOUT_MS = 180_000;

export class SimService {
  private child: ChildProcess | undefined;
  private expectedExit = false;
  /** Set when the service exited without being killed: the next check reports it. */
  crashed: string | undefined;
  /** The service's last lines of output, for a failure report. */
  readonly tail: string[] = [];

  private constructor(
    readonly serverUrl: string,
    readonly databaseName: string,
    /** The database's own URL, direct (the checks and the CLI read through it). */
    readonly directUrl: string,
    readonly proxy: TcpProxy,
    private readonly dataDir: string,
    readonly httpPort: number,
    private readonly wsPort: number,
    private readonly verbose: boolean,
  ) {}

  static async create(serverUrl: string, seed: number, verbose: boolean): Promise<SimService> {
    const name = `atrium_sim_${seed}_${randomBytes(4).toString('hex')}`;
    await adminQuery(serverUrl, `create database ${name}`);
    const directUrl = withDatabase(serverUrl, name);
    const target = new URL(directUrl);
    const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const dataDir = await mkdtemp(join(tmpdir(), 'atrium-sim-'));
    const service = new SimService(
      serverUrl,
      name,
      directUrl,
      proxy,
      dataDir,
      await freePort(),
      await freePort(),
      verbose,
    );
    const migrated = await service.cli(['migrate']);
    if (migrated.code !== 0) throw new Error(`migrate failed:\n${migrated.output}`);
    return service;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  private env(): Record<string, string> {
    const viaProxy = new URL(this.directUrl);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(this.proxy.port);
    const redis = process.env.REDIS_URL;
    return {
      ...process.env,
      ...SIM_SETTINGS,
      DATABASE_URL: viaProxy.toString(),
      ...(redis ? { REDIS_URL: redis, REDIS_KEY_PREFIX: `${this.databaseName}:` } : { REDIS_URL: '' }),
      DATA_DIR: this.dataDir,
      HOST: '127.0.0.1',
      HTTP_PORT: String(this.httpPort),
      WS_PORT: String(this.wsPort),
      // One process, said outright: production mode's default is a worker per core, and the
      // simulation's SIGKILL is a crash of the one process that serves.
      WORKERS: '1',
      MIGRATE_ON_START: 'false',
      LOG_LEVEL: 'warn',
      SHUTDOWN_GRACE_MS: '1000',
    } as Record<string, string>;
  }

  async start(): Promise<void> {
    this.expectedExit = false;
    const child = spawn(process.execPath, await npmStartArgs(), {
      env: this.env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream as NodeJS.ReadableStream }).on('line', (line) => this.keep(line));
    }
    child.once('exit', (code, signal) => {
      if (!this.expectedExit) this.crashed = `the service exited by itself (code ${code}, signal ${signal})`;
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (this.crashed) throw new Error(`${this.crashed}:\n${this.tail.join('\n')}`);
      const response = await fetch(`${this.baseUrl}/healthz`).catch(() => undefined);
      if (response?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`the service did not start:\n${this.tail.join('\n')}`);
      await sleep(50);
    }
  }

  private keep(line: string): void {
    if (this.verbose) console.log(`  [service] ${line}`);
    this.tail.push(line);
    if (this.tail.length > 40) this.tail.shift();
  }

  /** SIGKILL, as a crash or an OOM kill would: no drain, requests in flight lose their answers. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.expectedExit = true;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }

  /** Runs the CLI (`node --import tsx src/main.ts ...`) on the database directly; its exit code and output. */
  async cli(args: string[], dataDir?: string): Promise<{ code: number | null; output: string }> {
    const ownDir = dataDir ?? (await mkdtemp(join(tmpdir(), 'atrium-sim-cli-')));
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
        env: {
          ...process.env,
          DATABASE_URL: this.directUrl,
          REDIS_URL: '',
          DATA_DIR: ownDir,
          LOG_LEVEL: 'warn',
          DATABASE_QUERY_TIMEOUT_MS: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: CLI_TIMEOUT_MS,
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const [code] = (await once(child, 'close')) as [number | null];
      return { code, output };
    } finally {
      if (!dataDir) await rm(ownDir, { recursive: true, force: true });
    }
  }

  /** `atrium admin grant <username> admin`, through the running service's control channel. */
  async grantAdmin(username: string): Promise<void> {
    const { code, output } = await this.cli(['admin', 'grant', username, 'admin'], this.dataDir);
    if (code !== 0) throw new Error(`admin grant ${username} failed:\n${output}`);
  }

  async close(keepDatabase: boolean): Promise<void> {
    await this.kill();
    await this.proxy.close();
    await rm(this.dataDir, { recursive: true, force: true });
    if (!keepDatabase)
      await adminQuery(this.serverUrl, `drop database if exists ${this.databaseName} with (force)`);
  }
}
