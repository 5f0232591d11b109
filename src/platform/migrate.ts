import { readdir } from 'node:fs/promises';
import type { Migrator } from '@mikro-orm/migrations';
import { type Database, executeBound } from './db.js';
import pg from './pg-driver.js';

/** Where the names of the applied migrations are recorded. */
export const MIGRATIONS_TABLE = 'atrium_migrations';

/** Any fixed 64-bit number works; it only has to be the same in every process of the service. */
const MIGRATION_LOCK_KEY = 7_406_196_117_001n;

export interface MigrationStatus {
  executed: string[];
  pending: string[];
}

/**
 * Applies pending migrations in order and returns the names applied (empty when up to date).
 * Against a shared Postgres, several processes may start at once: a session-level advisory lock,
 * held on a connection of its own, lets one of them migrate while the others wait and then find
 * nothing left to do. The embedded database belongs to one process, so it needs no lock.
 * `databaseUrl` is where the lock is taken, the database's own by default.
 *
 * The migrations run through MikroORM on a connection of its own (withMigrator), without the
 * per-query bound that service requests have (DATABASE_QUERY_TIMEOUT_MS).
 */
export async function migrateUp(db: Database, databaseUrl?: string): Promise<string[]> {
  if (!(await anyPending(db))) return [];
  const { target } = db.pool;
  const lockUrl = databaseUrl ?? ('connectionString' in target ? target.connectionString : undefined);
  if (db.kind === 'embedded' || !lockUrl) return applyPending(db);
  const lockClient = new pg.Client({ connectionString: lockUrl });
  await lockClient.connect();
  try {
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    return await applyPending(db);
  } finally {
    await lockClient.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(() => {});
    await lockClient.end();
  }
}

function applyPending(db: Database): Promise<string[]> {
  return withMigrator(db, async (migrator) => (await migrator.up()).map((m) => m.name));
}

export function migrationStatus(db: Database): Promise<MigrationStatus> {
  return withMigrator(db, async (migrator) => {
    const executed = await migrator.getExecutedMigrations();
    const pending = await migrator.getPendingMigrations();
    return { executed: executed.map((m) => m.name), pending: pending.map((m) => m.name) };
  });
}

/**
 * Runs `work` with MikroORM's Migrator and the migrations (migrations/index.ts), loaded for it
 * and closed after it: together they weigh tens of megabytes of RSS that a process whose
 * database is up to date never needs. On Postgres the ORM opens a connection of its own; the
 * embedded database lends it the pool's only connection (orm-config.ts says why), held meanwhile.
 */
export async function withMigrator<T>(db: Database, work: (migrator: Migrator) => Promise<T>): Promise<T> {
  const [{ openMigrationOrm }, { migrationsList }] = await Promise.all([
    import('./orm-config.js'),
    import('../../migrations/index.js'),
  ]);
  const options = { tableName: MIGRATIONS_TABLE, migrationsList, connectMs: db.pool.timeouts.connectMs };
  const lent = db.kind === 'embedded' ? await db.pool.acquire() : undefined;
  try {
    const orm = await openMigrationOrm(db.pool.target, options, lent);
    try {
      return await work(orm.migrator as Migrator);
    } finally {
      await orm.close(true);
    }
  } finally {
    if (lent) await db.pool.release(lent);
  }
}

/** SQLSTATE of a statement on a table that does not exist (a database never migrated). */
const UNDEFINED_TABLE = '42P01';

/**
 * Whether a migration file has no row in the migrations table, in one query, so that a node
 * starting on an up-to-date database does not load the Migrator. The names are read from the
 * migration files next to the list (a test holds each listed name to its file's name): a stray
 * file, say one a build left behind, only makes the Migrator load and find nothing to do.
 */
async function anyPending(db: Database): Promise<boolean> {
  let applied: Set<string>;
  try {
    const rows = await executeBound<{ name: string }>(db.data, `select name from ${MIGRATIONS_TABLE}`, []);
    applied = new Set(rows.map((row) => row.name));
  } catch (error) {
    if ((error as { code?: unknown }).code === UNDEFINED_TABLE) return true;
    throw error;
  }
  return (await migrationFileNames()).some((name) => !applied.has(name));
}

/** The migrations directory: `migrations/` of the sources, or of the build beside `dist/src/`. */
const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);

/** The names of the migration files (`0001_initial` for 0001_initial.ts or .js). */
export async function migrationFileNames(): Promise<string[]> {
  const files = await readdir(MIGRATIONS_DIR);
  return files.flatMap((file) => /^(\d{4}_\w+)\.[cm]?[jt]s$/.exec(file)?.[1] ?? []);
}
