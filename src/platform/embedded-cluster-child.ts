import { readFile, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { openDatabase } from './db.js';
import { migrateUp } from './migrate.js';
import { platformConfig } from './platform-config.js';

/**
 * Run as a child process by embedded-cluster.ts: loads the empty cluster tarball at argv[2] into an
 * in-memory database, applies every migration and writes the result, gzipped, to argv[3]. In a
 * process of its own so that the Migrator and the migrations (megabytes of heap, kept once loaded)
 * and the memory the DDL grows PGlite by leave with it.
 */
const [emptyTar, out] = process.argv.slice(2);
if (!emptyTar || !out) throw new Error('usage: embedded-cluster-child <empty cluster tar> <out.tar.gz>');
// The database settings' defaults, not the environment's: this opens an in-memory database only.
const { DATA_DIR, DATABASE_URL, DATABASE_POOL_SIZE, DATABASE_CONNECT_TIMEOUT_MS, DATABASE_QUERY_TIMEOUT_MS } =
  platformConfig;
const settings = z
  .object({
    DATA_DIR,
    DATABASE_URL,
    DATABASE_POOL_SIZE,
    DATABASE_CONNECT_TIMEOUT_MS,
    DATABASE_QUERY_TIMEOUT_MS,
  })
  .parse({});
const db = await openDatabase(settings, {
  embedded: { loadDataDir: new Blob([await readFile(emptyTar)]) },
});
try {
  await migrateUp(db);
  const dump = await db.embedded?.pglite.dumpDataDir('none');
  if (!dump) throw new Error('The embedded database did not produce a dump.');
  await writeFile(out, gzipSync(new Uint8Array(await dump.arrayBuffer())));
} finally {
  await db.close();
}
