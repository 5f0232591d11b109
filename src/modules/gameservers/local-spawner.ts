import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { concretePorts } from '../../platform/free-ports.js';
import type { Logger } from '../../platform/log.js';
import { launchArguments } from './launch-command.js';
import type { Spawner, SpawnListener, SpawnRequest } from './spawner.js';

/** Variables a game server inherits; the service's own settings (database URL, keys) stay here. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'NODE_OPTIONS', 'SYSTEMROOT'];
/** A longer output line is cut, so a runaway server cannot flood the log with one line. */
const MAX_LOG_LINE = 2000;

interface Running {
  child: ChildProcess;
  /** Set when the service asked it to stop: its exit is then no news. */
  stopping: boolean;
  exited: Promise<unknown>;
}

export interface LocalSpawnerOptions {
  /** The program and its own arguments (launch-command.ts); the launch arguments follow. */
  command: readonly string[];
  maxRunning: number;
  stopGraceMs: number;
  /** Given to each server as PUBLIC_HOST: the host players connect to (GAMESERVER_PUBLIC_HOST). */
  publicHost?: string | undefined;
  log: Logger;
}

/**
 * Runs each game server as a child process of this node: the command with `--api-url`,
 * `--server-token`, `--world-id` and `--port` appended, executed directly (no shell, so nothing
 * in a world reaches one). Its stdout and stderr go to the service log with the server id; its
 * stdin stays open, so a server can notice the service died (end of stdin) and exit.
 */
export class LocalSpawner implements Spawner {
  readonly kind = 'local' as const;
  private readonly servers = new Map<string, Running>();
  /** Starts past the capacity check that have not taken their place in `servers` yet. */
  private launching = 0;
  /**
   * The last slots, kept for spawns by users who run no server (a quarter of the node, at least
   * one), so that one user can never take every slot from the others.
   */
  private readonly keptSlots: number;

  constructor(private readonly options: LocalSpawnerOptions) {
    this.keptSlots = Math.max(1, Math.floor(options.maxRunning / 4));
  }

  get running(): number {
    return this.servers.size;
  }

  runningIds(): string[] {
    return [...this.servers.keys()];
  }

  capacityRefusal(mayTakeLastSlots: boolean): AppError | undefined {
    const { maxRunning } = this.options;
    const taken = this.servers.size + this.launching;
    if (taken >= maxRunning) {
      return new AppError(
        ErrorCode.GAMESERVER_CAPACITY,
        `This node already runs ${maxRunning} game servers (GAMESERVER_MAX_RUNNING); try again later.`,
      );
    }
    if (!mayTakeLastSlots && taken >= maxRunning - this.keptSlots) {
      return new AppError(
        ErrorCode.GAMESERVER_CAPACITY,
        `This node keeps its last ${this.keptSlots} game server slots for players who run none, and a server you started still runs; try again later.`,
      );
    }
    return undefined;
  }

  async start(request: SpawnRequest, listener: SpawnListener): Promise<void> {
    const { command, log } = this.options;
    const refusal = this.capacityRefusal(request.mayTakeLastSlots);
    if (refusal) throw refusal;
    // The slot is taken from here on: concurrent starts must not all pass the check above while
    // this one looks for a port.
    this.launching++;
    let port: number;
    try {
      // A port free on this host now, for the server to bind (another process may take it first; rarely).
      [port] = (await concretePorts('127.0.0.1', [0])) as [number];
    } finally {
      this.launching--;
    }
    const [program, ...own] = command as [string, ...string[]];
    const env = Object.fromEntries(
      INHERITED_ENV.filter((name) => process.env[name] !== undefined).map((name) => [
        name,
        process.env[name],
      ]),
    );
    if (this.options.publicHost) env.PUBLIC_HOST = this.options.publicHost;
    const child = spawn(program, [...own, ...launchArguments({ ...request, port })], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
      shell: false,
    });
    const serverLog = log.child({ serverId: request.serverId, worldId: request.worldId });
    const running: Running = { child, stopping: false, exited: once(child, 'close').catch(() => undefined) };
    this.servers.set(request.serverId, running);
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (error) {
      this.servers.delete(request.serverId);
      serverLog.error({ err: error, program }, 'the game server could not be started');
      throw new AppError(
        ErrorCode.GAMESERVER_UNAVAILABLE,
        `The game server command could not be run: ${program}.`,
      );
    }
    child.stdin?.on('error', () => undefined);
    for (const [stream, name] of [
      [child.stdout, 'stdout'],
      [child.stderr, 'stderr'],
    ] as const) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
        serverLog.info(
          { stream: name },
          line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line,
        ),
      );
    }
    serverLog.info({ pid: child.pid, port }, 'game server started');
    child.once('exit', (code, signal) => {
      if (this.servers.get(request.serverId) === running) this.servers.delete(request.serverId);
      serverLog.info({ code, signal }, 'game server exited');
      if (running.stopping) return;
      listener.ended(request.serverId, {
        failed: code !== 0,
        reason:
          code === null
            ? `The game server was killed by ${signal}.`
            : `The game server exited with code ${code}.`,
      });
    });
  }

  async stop(serverId: string): Promise<void> {
    const running = this.servers.get(serverId);
    if (!running) return;
    running.stopping = true;
    const { child } = running;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), this.options.stopGraceMs);
    try {
      await running.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((id) => this.stop(id)));
  }
}
