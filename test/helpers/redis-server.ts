import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { concretePorts } from '../../src/platform/free-ports.js';
import { untilOutputLine } from './child-output.js';

/** Whether a `redis-server` binary is on PATH, for tests that start a Redis of their own. */
export function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A port nothing listens on right now, chosen by the kernel. */
export async function freePort(): Promise<number> {
  const [port] = await concretePorts('127.0.0.1', [0]);
  return port as number;
}

export interface RedisServerOptions {
  /** A configuration file, given first (a Sentinel's, which it rewrites as it learns). */
  configFile?: string;
  /** More arguments after the defaults (`--cluster-enabled yes`, `--replicaof ...`, `--sentinel`). */
  args?: string[];
  /** The log line that says the server is ready; a Sentinel logs `+monitor` instead. */
  readyLine?: string;
}

/**
 * A private, throwaway redis-server (no persistence) that a test can stop and start again on the
 * same port, to play a Redis outage against the app without touching the shared Redis.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  /** Its working directory: a replica writes the primary's snapshot there (dump.rdb). */
  private dir: string | undefined;

  private constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), options);
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server and resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.process) return;
    const { configFile, args = [], readyLine = 'Ready to accept connections' } = this.options;
    this.dir = await mkdtemp(join(tmpdir(), 'atrium-redis-'));
    const child = spawn(
      'redis-server',
      [
        ...(configFile ? [configFile] : []),
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir],
        ...['--save', '', '--appendonly', 'no'],
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    try {
      await untilOutputLine(child, 'stdout', readyLine, { name: 'redis-server', timeoutMs: 10_000 });
    } catch (error) {
      this.process = undefined;
      throw error;
    }
  }

  /** Kills the server the way a crash would (SIGKILL) and resolves once it is gone. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}
