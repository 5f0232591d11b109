import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';

/**
 * The embedded database's first start without initdb in the service process. PGlite runs initdb
 * in a second WASM instance whose memory (hundreds of MiB of ArrayBuffers) stays until a major
 * collection and leaves the main instance's memory grown: a first start rested 100 MiB above a
 * restart and took seconds longer (docs/performance.md, "Process memory and start time"). So an
 * initialised, empty cluster is made once by a short-lived child process (its memory leaves with
 * it), kept as a gzip tarball in a cache beside the installed PGlite (keyed by PGlite's version),
 * and a first start unpacks it into DATA_DIR: the service then opens the database as on a restart.
 * `npm install` (the `prepare` script) makes the cache, so a fresh machine's first start is
 * already fast; a missing or damaged cache is made again, never trusted.
 */

/** Bumped when what the cache holds changes (the file name carries it, so an old file is not read). */
const CACHE_FORMAT = 1;
/** Written last, so a DATA_DIR whose unpacking was cut short has none and is unpacked again. */
const MARKER = 'PG_VERSION';
/** The lock file of embedded-postgres.ts lives in the data directory; clearing leftovers keeps it. */
const KEPT_ON_CLEAR = new Set(['embedded-db.lock']);
/** Written by the running instance the dump came from; a start writes its own. */
const SKIPPED = new Set(['postmaster.pid']);

const pgliteEntry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
/** …/node_modules/@electric-sql/pglite, found from the module that loads, so it holds for dist/ too. */
const pgliteDir = dirname(dirname(pgliteEntry));

/** `node_modules/.cache/atrium` of the node_modules PGlite is installed in. */
export function defaultClusterCacheDir(): string {
  return join(dirname(dirname(pgliteDir)), '.cache', 'atrium');
}

let pgliteVersion: string | undefined;
async function installedPgliteVersion(): Promise<string> {
  pgliteVersion ??= (
    JSON.parse(await readFile(join(pgliteDir, 'package.json'), 'utf8')) as { version: string }
  ).version;
  return pgliteVersion;
}

/**
 * A cluster right after initdb (`empty`), or with every migration applied (`migrated`): what a new
 * DATA_DIR gets, so that a first start neither runs the migrations nor loads the Migrator.
 */
export type ClusterStage = 'empty' | 'migrated';

/** The migrations this code applies: migrations/ of the sources, or of dist/ for the build. */
const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));
/** Written into dist/migrations by `npm run build`: the sources' fingerprint, so both share one cache file. */
export const FINGERPRINT_FILE = 'fingerprint';

/**
 * What the migrations are, as 16 hex digits: the file written at build time, else a hash of every
 * migration file's name and text (an edited migration gets a new migrated cluster, not a stale one).
 */
export async function migrationsFingerprint(dir = migrationsDir): Promise<string> {
  const written = await readFile(join(dir, FINGERPRINT_FILE), 'utf8').catch(() => undefined);
  if (written?.trim()) return written.trim();
  // The sources' .ts files, or the build's .js files when it was compiled without the fingerprint.
  const files = (await readdir(dir)).filter((name) => !/\.(test|d)\.ts$/.test(name)).sort();
  const sources = files.filter((name) => name.endsWith('.ts'));
  const names = sources.length > 0 ? sources : files.filter((name) => name.endsWith('.js'));
  const hash = createHash('sha256');
  for (const name of names)
    hash
      .update(`${name}\0`)
      .update(await readFile(join(dir, name)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** The cache file of a stage: per PGlite version (a cluster belongs to the Postgres build that made it) and migrations. */
export async function clusterCacheFile(
  cacheDir = defaultClusterCacheDir(),
  stage: ClusterStage = 'empty',
): Promise<string> {
  const what = stage === 'empty' ? 'empty' : `migrated-${await migrationsFingerprint()}`;
  return join(cacheDir, `pglite-${await installedPgliteVersion()}-${what}-v${CACHE_FORMAT}.tar.gz`);
}

export interface TarEntry {
  /** Relative to the data directory, without a leading slash. */
  name: string;
  directory: boolean;
  data: Uint8Array;
}

/** What a cluster tarball holds, checked; undefined when it is damaged, cut short or not a cluster. */
export function readClusterTar(gzipped: Uint8Array): { tar: Uint8Array; entries: TarEntry[] } | undefined {
  let tar: Uint8Array;
  try {
    // gzip's CRC-32 and length trailer refuse a file cut short or altered.
    tar = gunzipSync(gzipped);
  } catch {
    return undefined;
  }
  const entries = parseTar(tar);
  if (!entries?.some((entry) => entry.name === MARKER && !entry.directory)) return undefined;
  return { tar, entries };
}

/** A ustar archive's entries, or undefined at the first header whose checksum is wrong or when the end marker is missing. */
function parseTar(tar: Uint8Array): TarEntry[] | undefined {
  const entries: TarEntry[] = [];
  const text = (from: number, length: number) => {
    const field = tar.subarray(from, from + length);
    const end = field.indexOf(0);
    return Buffer.from(end < 0 ? field : field.subarray(0, end)).toString('utf8');
  };
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) return entries;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (header[i] as number);
    if (Number.parseInt(text(offset + 148, 8).trim(), 8) !== sum) return undefined;
    const size = Number.parseInt(text(offset + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156] as number);
    const prefix = text(offset + 345, 155);
    const name = `${prefix ? `${prefix}/` : ''}${text(offset, 100)}`.replace(/^\/+/, '').replace(/\/+$/, '');
    const dataStart = offset + 512;
    if (!Number.isInteger(size) || size < 0 || dataStart + size > tar.length) return undefined;
    if (!name || name.split('/').some((part) => part === '..' || part === '.')) return undefined;
    if (type === '5') entries.push({ name, directory: true, data: new Uint8Array() });
    else if (type === '0' || type === '\0') {
      entries.push({ name, directory: false, data: tar.subarray(dataStart, dataStart + size) });
    }
    offset = dataStart + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

export type ClusterSource = 'existing' | 'cache' | 'made';

export interface ClusterOptions {
  /** Where the cluster tarball is kept; defaultClusterCacheDir() unless a test says otherwise. */
  cacheDir?: string;
  /** prepareClusterDir: `migrated` unless said; clusterTarball: `empty` unless said. */
  stage?: ClusterStage;
}

/**
 * Makes `dataDir` hold an initialised cluster unless it holds one already (it has PG_VERSION):
 * unpacks the cached tarball (migrated unless `options.stage` says), made first when missing or
 * damaged. Anything else in a data directory without PG_VERSION is what an unpacking or an initdb
 * cut short left behind, and goes.
 */
export async function prepareClusterDir(
  dataDir: string,
  options: ClusterOptions = {},
): Promise<ClusterSource> {
  const target = resolve(dataDir);
  if (await exists(join(target, MARKER))) return 'existing';
  const { entries, source } = await clusterEntries(options.cacheDir, options.stage ?? 'migrated');
  await mkdir(target, { recursive: true, mode: 0o700 });
  for (const name of await readdir(target)) {
    if (!KEPT_ON_CLEAR.has(name)) await rm(join(target, name), { recursive: true, force: true });
  }
  const marker = entries.find((entry) => entry.name === MARKER) as TarEntry;
  // About 1,300 files, most of a page or empty: creating them is the cost (0.3 to 1 ms each on this
  // machine's disk, busier or not), so they are written 32 at a time through the thread pool.
  const files: TarEntry[] = [];
  const directories = new Set<string>();
  for (const entry of entries) {
    if (entry === marker || SKIPPED.has(entry.name)) continue;
    if (!join(target, entry.name).startsWith(target + sep)) continue;
    if (entry.directory) directories.add(join(target, entry.name));
    else {
      directories.add(dirname(join(target, entry.name)));
      files.push(entry);
    }
  }
  for (const directory of directories) await mkdir(directory, { recursive: true, mode: 0o700 });
  for (let i = 0; i < files.length; i += 32) {
    await Promise.all(
      files.slice(i, i + 32).map((file) => writeFile(join(target, file.name), file.data, { mode: 0o600 })),
    );
  }
  await writeFile(join(target, MARKER), marker.data, { mode: 0o600 });
  return source;
}

/** The cluster as an uncompressed tarball (PGlite's `loadDataDir` for an in-memory database). */
export async function clusterTarball(options: ClusterOptions = {}): Promise<Uint8Array> {
  return (await clusterEntries(options.cacheDir, options.stage ?? 'empty')).tar;
}

async function clusterEntries(
  cacheDir: string | undefined,
  stage: ClusterStage,
): Promise<{ tar: Uint8Array; entries: TarEntry[]; source: 'cache' | 'made' }> {
  const file = await clusterCacheFile(cacheDir, stage);
  const cached = readClusterTar(await readFile(file).catch(() => new Uint8Array()));
  if (cached) return { ...cached, source: 'cache' };
  if (stage === 'empty') return { ...(await makeClusterCache(file, runInitdbChild)), source: 'made' };
  // The migrated cluster is the empty one, migrated by a child process that loads the Migrator.
  const empty = await clusterEntries(cacheDir, 'empty');
  const made = await makeClusterCache(file, async (out) => {
    await writeFile(`${out}.empty.tar`, empty.tar);
    try {
      await runChild(migrateChildArgs(`${out}.empty.tar`, out));
    } finally {
      await unlink(`${out}.empty.tar`).catch(() => {});
    }
  });
  return { ...made, source: 'made' };
}

/**
 * Runs initdb in a child process and stores its tarball at `file`: written under a name of its own
 * and renamed into place, so a reader never sees half a file and two processes making it at once
 * each rename a whole one. When the cache directory cannot be written (a read-only install), the
 * tarball is made in a temp dir and used once.
 */
async function makeClusterCache(
  file: string,
  produce: (out: string) => Promise<void>,
): Promise<{ tar: Uint8Array; entries: TarEntry[] }> {
  let temp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  let cacheable = true;
  try {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(temp, new Uint8Array(), { flag: 'wx' });
  } catch {
    cacheable = false;
    temp = join(await mkdtemp(join(tmpdir(), 'atrium-cluster-')), 'cluster.tar.gz');
  }
  try {
    await produce(temp);
    const made = readClusterTar(await readFile(temp));
    if (!made) throw new Error(`The embedded database cluster made for ${file} could not be read back.`);
    if (cacheable) {
      await rename(temp, file);
      await pruneCacheDir(file);
    }
    return made;
  } finally {
    if (cacheable) await unlink(temp).catch(() => {});
    else await rm(dirname(temp), { recursive: true, force: true });
  }
}

/** Other migrations' clusters are kept this long: checkouts sharing node_modules may each use one. */
const OTHER_MIGRATIONS_KEPT_MS = 24 * 3600_000;

/**
 * Removes from the cache directory other PGlite versions' clusters, other migrations' clusters a
 * day old, and the temp files of processes that died while making one (their pid is in the name).
 */
async function pruneCacheDir(file: string): Promise<void> {
  const dir = dirname(file);
  const version = await installedPgliteVersion();
  for (const name of await readdir(dir).catch(() => [])) {
    const path = join(dir, name);
    const match = /^pglite-(.+?)-(empty|migrated-[0-9a-f]+)-v\d+\.tar\.gz(?:\.(\d+)-[0-9a-f]+\.tmp)?$/.exec(
      name,
    );
    if (!match || path === file) continue;
    const [, ofVersion, what, pid] = match;
    if (pid && isAlive(Number(pid))) continue;
    if (!pid && ofVersion === version && what?.startsWith('migrated-')) {
      const { mtimeMs } = await stat(path).catch(() => ({ mtimeMs: Date.now() }));
      if (Date.now() - mtimeMs < OTHER_MIGRATIONS_KEPT_MS) continue;
    }
    if (!pid && ofVersion === version && what === 'empty') continue;
    await unlink(path).catch(() => {});
  }
}

/** Whether a process with this pid runs (one of another user's too): a lock or a temp file's owner. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Plain JavaScript run by `node -e`, so it needs neither tsx nor the compiled build. */
const INITDB_CHILD = `
const [pgliteUrl, out] = process.argv.slice(1);
const { PGlite } = await import(pgliteUrl);
const { writeFile } = await import('node:fs/promises');
const { gzipSync } = await import('node:zlib');
const db = await PGlite.create();
const dump = await db.dumpDataDir('none');
await db.close();
await writeFile(out, gzipSync(new Uint8Array(await dump.arrayBuffer())));
`;

function runInitdbChild(out: string): Promise<void> {
  const pgliteModule = pathToFileURL(join(pgliteDir, 'dist', 'index.js')).href;
  return runChild(['--input-type=module', '-e', INITDB_CHILD, pgliteModule, out]);
}

/** embedded-cluster-child: the sources through tsx, or the build as it is. */
function migrateChildArgs(emptyTar: string, out: string): string[] {
  const source = import.meta.url.endsWith('.ts');
  const child = fileURLToPath(new URL(`./embedded-cluster-child.${source ? 'ts' : 'js'}`, import.meta.url));
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return [...(source ? ['--import', tsx] : []), child, emptyTar, out];
}

function runChild(args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    // PGlite runs each statement here once, where V8's baseline compiler alone, the fastest to
    // compile, is the quickest way through (docs/performance.md, "Embedded mode: the database's code").
    const child = spawn(process.execPath, ['--liftoff-only', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    child.once('error', fail);
    child.once('exit', (code, signal) => {
      if (code === 0) done();
      else
        fail(
          new Error(
            `Making the embedded database cluster failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`,
          ),
        );
    });
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
