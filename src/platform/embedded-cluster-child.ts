import { readFile, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { configFrom } from '../config.js';
import { openDatabase } from './db.js';
import { migrateUp } from './migrate.js';

/**
 * Run as a child process by embedded-cluster.ts: loads the empty cluster tarball at argv[2] into an
 * in-memory database, applies every migration and writes the result, gzipped, to argv[3]. In a
 * process of its own so that the Migrator and the migrations (megabytes of heap, kept once loaded)
 * and the memory the DDL grows PGlite by leave with it.
 */
const [emptyTar, out] = process.argv.slice(2);
if (!emptyTar || !out) throw new Error('usage: embedded-cluster-child <empty cluster tar> <out.tar.gz>');
const db = await openDatabase(configFrom({}), {
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
