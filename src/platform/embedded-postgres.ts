import { mkdir, mkdtemp, open, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { clusterTarball, isAlive, prepareClusterDir } from './embedded-cluster.js';
import { StartupError } from './startup-error.js';

/**
 * The embedded database: PGlite (Postgres compiled to WASM) served on a private unix socket, so
 * the service talks to it through the same MikroORM postgresql driver and SQL as production.
 * Only this process can reach the socket (a 0700 temp dir), and PGlite runs one query at a time,
 * which is why the ORM pool over it is one connection.
 */
export interface EmbeddedPostgres {
  /** Directory holding the `.s.PGSQL.5432` socket; pass it as the pg `host`. */
  socketDir: string;
  port: number;
  pglite: PGlite;
  close(): Promise<void>;
}

const SOCKET_PORT = 5432;

/**
 * Postgres settings the embedded database starts with, after PGlite's own. Postgres' default
 * shared_buffers (128MB) lives in the WASM memory, which never shrinks: the buffers a start and a
 * day's work touch stay resident. 16MB holds the working set of the databases embedded mode is for
 * (a developer's, a small deployment's) and, measured, took 80 to 130 MiB off the resting process
 * (docs/performance.md, "Process memory and start time").
 */
export const EMBEDDED_SETTINGS = ['-c', 'shared_buffers=16MB'];

/**
 * How V8 compiles PGlite's WebAssembly (docs/performance.md, "Embedded mode: the database's code").
 * By default it recompiles hot functions with its optimizing compiler on its platform's background
 * threads, whose malloc arenas keep the compilations' memory: the process rested at 238 to 283 MiB,
 * against 166 to 191 on the baseline compiler (Liftoff) only, which costs a tenth to a quarter of
 * the throughput of embedded routes that run SQL. With one platform thread (`--v8-pool-size=1`,
 * which npm start and the image give the service) and one compilation task, that memory stays in
 * one arena and the process rests under 250 MiB with the optimized code; without it (tests,
 * `npm run dev`, the children that make the cluster cache, a node started by hand), Liftoff only.
 * V8 reads these when it compiles a module, which PGlite does when created; they change no
 * JavaScript, and production mode never loads this module. Process-wide, hence set once, here.
 */
export function wasmCompilerFlag(execArgv: readonly string[], nodeOptions = ''): string {
  const onePlatformThread = [...execArgv, ...nodeOptions.split(/\s+/)].includes('--v8-pool-size=1');
  return onePlatformThread ? '--wasm-num-compilation-tasks=1' : '--liftoff-only';
}

setFlagsFromString(wasmCompilerFlag(process.execArgv, process.env.NODE_OPTIONS));

export interface EmbeddedOptions {
  /** Where PGlite keeps its files; undefined keeps everything in memory. */
  dataDir?: string;
  /** A tarball from `pglite.dumpDataDir()` to start from (tests clone a migrated template this way). */
  loadDataDir?: Blob | File;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const releaseLock = options.dataDir ? await lockDataDir(options.dataDir) : async () => {};
  let pglite: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  // Unix socket paths are limited to ~107 bytes, so the socket lives in a short temp dir, not in DATA_DIR.
  const socketDir = await mkdtemp(join(tmpdir(), 'atrium-pg-'));
  try {
    // Never initdb here (embedded-cluster.ts says why): a new database starts from the cached cluster.
    let loadDataDir = options.loadDataDir;
    if (options.dataDir && !loadDataDir) await prepareClusterDir(options.dataDir);
    if (!options.dataDir && !loadDataDir) loadDataDir = new Blob([await clusterTarball()]);
    pglite = await PGlite.create({
      ...(options.dataDir ? { dataDir: resolve(options.dataDir) } : {}),
      ...(loadDataDir ? { loadDataDir } : {}),
      startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
    });
    server = new PGLiteSocketServer({ db: pglite, path: join(socketDir, `.s.PGSQL.${SOCKET_PORT}`) });
    await server.start();
  } catch (error) {
    await server?.stop().catch(() => {});
    await pglite?.close().catch(() => {});
    await rm(socketDir, { recursive: true, force: true });
    await releaseLock();
    throw error;
  }
  const db = pglite;
  const socketServer = server;
  return {
    socketDir,
    port: SOCKET_PORT,
    pglite: db,
    async close() {
      await socketServer.stop();
      await db.close();
      await rm(socketDir, { recursive: true, force: true });
      await releaseLock();
    },
  };
}

/**
 * PGlite files must be opened by one process only; a second `npm start` on the same DATA_DIR
 * would corrupt them. A pid lock file refuses the second process and is reclaimed when its owner died.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true });
  const lockPath = join(dataDir, 'embedded-db.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => unlink(lockPath).catch(() => {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        throw new StartupError(
          `The embedded database in ${dataDir} is in use by process ${owner}; stop it or use another DATA_DIR.`,
        );
      }
      await unlink(lockPath).catch(() => {});
    }
  }
  throw new Error(`Could not lock the embedded database in ${dataDir}.`);
}
