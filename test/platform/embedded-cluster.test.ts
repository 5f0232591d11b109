import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import {
  clusterCacheFile,
  defaultClusterCacheDir,
  FINGERPRINT_FILE,
  migrationsFingerprint,
  prepareClusterDir,
  readClusterTar,
} from '../../src/platform/embedded-cluster.js';
import { migrateUp } from '../../src/platform/migrate.js';

/**
 * The embedded database's cluster cache (src/platform/embedded-cluster.ts). Each case that finds
 * no usable cache runs initdb in a child process (seconds each), so cases share what they can.
 */
describe('the embedded cluster cache', () => {
  let root: string;
  let cacheDir: string;
  /** A whole cache file, made by the first case, for the cases that damage a copy of it. */
  let good: Buffer;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'atrium-cluster-'));
    cacheDir = join(root, 'cache');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('is made by a child process when missing, then unpacked again by every first start', {
    timeout: 120_000,
  }, async () => {
    // What an older PGlite's cache and a process killed while making one left: both go.
    await mkdir(cacheDir, { recursive: true });
    await writeFile(join(cacheDir, 'pglite-0.0.1-empty-v1.tar.gz'), 'old');
    await writeFile(join(cacheDir, 'pglite-0.0.1-empty-v1.tar.gz.999999999-abcd.tmp'), 'cut short');
    expect(await prepareClusterDir(join(root, 'a'), { cacheDir, stage: 'empty' })).toBe('made');
    good = await readFile(await clusterCacheFile(cacheDir, 'empty'));
    expect(readClusterTar(good)).toBeDefined();
    expect(await prepareClusterDir(join(root, 'b'), { cacheDir, stage: 'empty' })).toBe('cache');
    expect(await prepareClusterDir(join(root, 'a'), { cacheDir, stage: 'empty' })).toBe('existing');
    expect(await readFile(join(root, 'b', 'PG_VERSION'), 'utf8')).toMatch(/^\d+\n$/);
    // Only the cache file: no temp file of the making, nothing of other versions.
    expect(await readdir(cacheDir)).toEqual([(await clusterCacheFile(cacheDir, 'empty')).split('/').pop()]);
  });

  it('refuses a tarball that is cut short, altered, or holds no cluster', () => {
    expect(readClusterTar(good.subarray(0, good.length - 1000))).toBeUndefined();
    const tar = gunzipSync(good);
    const altered = Buffer.from(tar);
    altered[10] = (altered[10] as number) ^ 1; // in the first header's name: its checksum no longer matches
    expect(readClusterTar(gzipSync(altered))).toBeUndefined();
    // Whole headers, but the end-of-archive blocks are missing.
    expect(readClusterTar(gzipSync(tar.subarray(0, 512 * 8)))).toBeUndefined();
    expect(readClusterTar(gzipSync(Buffer.alloc(1024)))).toBeUndefined();
    expect(readClusterTar(Buffer.from('not gzip'))).toBeUndefined();
  });

  it('makes a damaged cache file again instead of unpacking it', { timeout: 120_000 }, async () => {
    const file = await clusterCacheFile(cacheDir, 'empty');
    await writeFile(file, good.subarray(0, good.length >> 1));
    expect(await prepareClusterDir(join(root, 'c'), { cacheDir, stage: 'empty' })).toBe('made');
    expect(readClusterTar(await readFile(file))).toBeDefined();
    expect(await readFile(join(root, 'c', 'PG_VERSION'), 'utf8')).toMatch(/^\d+\n$/);
  });

  it('unpacks again over what an unpacking cut short left, keeping the lock file', async () => {
    const dir = join(root, 'd');
    await mkdir(join(dir, 'base', '1'), { recursive: true });
    await writeFile(join(dir, 'base', '1', '1259'), 'half a file');
    await writeFile(join(dir, 'embedded-db.lock'), String(process.pid));
    expect(await prepareClusterDir(dir, { cacheDir, stage: 'empty' })).toBe('cache');
    expect(await readFile(join(dir, 'embedded-db.lock'), 'utf8')).toBe(String(process.pid));
    expect((await readFile(join(dir, 'base', '1', '1259'))).length).toBeGreaterThan(8192 - 1);
    expect(await readdir(dir)).not.toContain('postmaster.pid');
  });

  it('gives two first starts at once, with no cache, each a whole cluster and leaves one cache file', {
    timeout: 120_000,
  }, async () => {
    const racing = join(root, 'racing-cache');
    const sources = await Promise.all([
      prepareClusterDir(join(root, 'e'), { cacheDir: racing, stage: 'empty' }),
      prepareClusterDir(join(root, 'f'), { cacheDir: racing, stage: 'empty' }),
    ]);
    expect(sources).toEqual(['made', 'made']);
    expect(await readdir(racing)).toEqual([(await clusterCacheFile(racing, 'empty')).split('/').pop()]);
    expect(readClusterTar(await readFile(await clusterCacheFile(racing, 'empty')))).toBeDefined();
    for (const dir of ['e', 'f']) expect(await readdir(join(root, dir))).toContain('PG_VERSION');
  });

  it('starts without a cache where the cache cannot be written', { timeout: 120_000 }, async () => {
    const blocker = join(root, 'not-a-directory');
    await writeFile(blocker, '');
    expect(
      await prepareClusterDir(join(root, 'g'), { cacheDir: join(blocker, 'cache'), stage: 'empty' }),
    ).toBe('made');
    expect(await readdir(join(root, 'g'))).toContain('PG_VERSION');
  });

  it('gives a new data directory the migrated cluster, made from the cached empty one in a child process', {
    timeout: 120_000,
  }, async () => {
    const dataDir = join(root, 'migrated');
    expect(await prepareClusterDir(join(dataDir, 'pgdata'), { cacheDir })).toBe('made');
    expect((await readdir(cacheDir)).sort()).toEqual(
      [await clusterCacheFile(cacheDir, 'empty'), await clusterCacheFile(cacheDir, 'migrated')]
        .map((file) => file.split('/').pop())
        .sort(),
    );
    expect(await prepareClusterDir(join(root, 'migrated-again'), { cacheDir })).toBe('cache');
    const db = await openDatabase(configFrom({ DATA_DIR: dataDir }), {
      embedded: { dataDir: join(dataDir, 'pgdata') },
    });
    try {
      expect(await migrateUp(db)).toEqual([]);
      const [row] = await executeBound<{ n: number }>(db.data, 'select count(*)::int as n from users', []);
      expect(row?.n).toBe(0);
    } finally {
      await db.close();
    }
  });

  it('names another migrated cluster when a migration changes, and the build names the same one', async () => {
    const copy = join(root, 'migrations-copy');
    await cp(fileURLToPath(new URL('../../migrations/', import.meta.url)), copy, { recursive: true });
    const before = await migrationsFingerprint(copy);
    expect(before).toBe(await migrationsFingerprint());
    await writeFile(join(copy, '0001_initial.ts'), '// edited\n', { flag: 'a' });
    const after = await migrationsFingerprint(copy);
    expect(after).toMatch(/^[0-9a-f]{16}$/);
    expect(after).not.toBe(before);
    await writeFile(join(copy, FINGERPRINT_FILE), `${before}\n`);
    expect(await migrationsFingerprint(copy)).toBe(before);
  });

  it("starts the service's database on a new DATA_DIR from the default cache, already migrated", {
    timeout: 120_000,
  }, async () => {
    const dataDir = join(root, 'service');
    const db = await openDatabase(configFrom({ DATA_DIR: dataDir }));
    try {
      expect(await migrateUp(db)).toEqual([]);
      await executeBound(
        db.data,
        `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
        values ('0190a000-0000-7000-8000-00000000abce', 'first_start', 'x', now(), now())`,
        [],
      );
      const [row] = await executeBound<{ n: number }>(db.data, 'select count(*)::int as n from users', []);
      expect(row?.n).toBe(1);
    } finally {
      await db.close();
    }
    expect(await prepareClusterDir(join(dataDir, 'pgdata'))).toBe('existing');
    expect(
      readClusterTar(await readFile(await clusterCacheFile(defaultClusterCacheDir(), 'migrated'))),
    ).toBeDefined();
  });
});
