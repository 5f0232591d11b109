import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { untilOutputLine } from './child-output.js';
import { freePort } from './redis-server.js';

/** The newest PostgreSQL server binaries of the Debian layout (/usr/lib/postgresql/<v>/bin), if any. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/**
 * PostgreSQL refuses to run as root: as root (a container), the server runs as the `postgres`
 * account the packages create, and owns its temp directory.
 */
function serverAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * A private, throwaway PostgreSQL (initdb in a temp directory, a free port, its unix socket in that
 * directory) that a test or the soak can crash and start again on the same port, to play a
 * database restart without touching the shared server. `fsync=off` keeps initdb and commits cheap;
 * it loses nothing here, because a crash of the server process (not of the machine) leaves what
 * was written in the page cache. Commits stay synchronous, so an acknowledged commit survives.
 */
export class PostgresServer {
  private process: ChildProcess | undefined;
  /** Milliseconds the last start took until the server accepted connections. */
  lastStartMs = 0;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly bin: string,
    private readonly account: { uid: number; gid: number } | undefined,
  ) {}

  /** initdb in a fresh temp directory, then a started server. */
  static async start(): Promise<PostgresServer> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('no PostgreSQL binaries in /usr/lib/postgresql/*/bin');
    const dir = await mkdtemp(join(tmpdir(), 'atrium-pg-'));
    const account = serverAccount();
    if (account) await chown(dir, account.uid, account.gid);
    const server = new PostgresServer(await freePort(), dir, bin, account);
    execFileSync(
      join(bin, 'initdb'),
      ['-D', server.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions'],
      { ...server.spawnOptions(), stdio: 'pipe' } as Parameters<typeof execFileSync>[2],
    );
    await server.start();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  private spawnOptions(): SpawnOptions {
    return this.account ? { uid: this.account.uid, gid: this.account.gid, cwd: this.dir } : { cwd: this.dir };
  }

  /** Starts the server (crash recovery first after a crash) and resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.process) return;
    const started = performance.now();
    const settings = {
      port: String(this.port),
      listen_addresses: '127.0.0.1',
      unix_socket_directories: this.dir,
      fsync: 'off',
      full_page_writes: 'off',
      max_connections: '200',
    };
    const args = [
      '-D',
      this.dataDir,
      ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]),
    ];
    const child = spawn(join(this.bin, 'postgres'), args, {
      ...this.spawnOptions(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.process = child;
    try {
      await untilOutputLine(child, 'stderr', 'database system is ready to accept connections', {
        name: 'postgres',
        timeoutMs: 60_000,
      });
    } catch (error) {
      this.process = undefined;
      throw error;
    }
    this.lastStartMs = performance.now() - started;
  }

  /**
   * Stops the server the way a crash does: SIGQUIT is PostgreSQL's immediate shutdown (`pg_ctl
   * stop -m immediate`), every connection dropped at once, no checkpoint, crash recovery on the
   * next start. Unlike SIGKILL of the postmaster it takes its backends down with it, so the port
   * and shared memory are free for the restart.
   */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGQUIT');
    await exited;
  }

  /** Stops the server and removes its files. */
  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
