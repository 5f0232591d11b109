import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * PGlite on the data directory BARE_PGLITE_DIR, served on a unix socket for pgbench: the embedded
 * ceiling of the data-path benchmark's loadout figure. Prints `{"port": 5432, "host": dir}`.
 */
const db = await PGlite.create({ dataDir: process.env.BARE_PGLITE_DIR as string });
const host = await mkdtemp(join(tmpdir(), 'atrium-pglite-'));
// pgbench keeps its first connection open beside the client's.
const server = new PGLiteSocketServer({ db, path: join(host, '.s.PGSQL.5432'), maxConnections: 2 });
await server.start();
console.log(JSON.stringify({ port: 5432, host }));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
