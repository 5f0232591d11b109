import { readdir } from 'node:fs/promises';
import type { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { configFrom } from '../config.js';
import { type Database, executeBound, openDatabase } from './db.js';
import { MIGRATIONS_TABLE } from './orm-config.js';

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
 *
 * On Postgres the migrations run on connections of their own without the per-query bound that
 * service requests have (DATABASE_QUERY_TIMEOUT_MS): building an index on a large table may
 * rightly take minutes, and a migration cut off at one second would stop every start.
 */
export async function migrateUp(db: Database, databaseUrl?: string): Promise<string[]> {
  if (!(await anyPending(db))) return [];
  if (db.kind === 'embedded' || !databaseUrl) return applyPending(db);
  const lockClient = new pg.Client({ connectionString: databaseUrl });
  await lockClient.connect();
  try {
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    const unbounded = await openDatabase(
      configFrom({ DATABASE_URL: databaseUrl, DATABASE_QUERY_TIMEOUT_MS: 0, DATABASE_POOL_SIZE: 1 }),
    );
    try {
      return await applyPending(unbounded);
    } finally {
      await unbounded.close();
    }
  } finally {
    await lockClient.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(() => {});
    await lockClient.end();
  }
}

async function applyPending(db: Database): Promise<string[]> {
  return (await (await migratorOf(db)).up()).map((m) => m.name);
}

export async function migrationStatus(db: Database): Promise<MigrationStatus> {
  const migrator = await migratorOf(db);
  const executed = await migrator.getExecutedMigrations();
  const pending = await migrator.getPendingMigrations();
  return { executed: executed.map((m) => m.name), pending: pending.map((m) => m.name) };
}

/**
 * The ORM's Migrator with the migrations (migrations/index.ts), loaded on first use: together
 * they weigh megabytes of heap that a process whose database is up to date never needs.
 */
export async function migratorOf(db: Database): Promise<Migrator> {
  const [{ Migrator }, { migrationsList }] = await Promise.all([
    import('@mikro-orm/migrations'),
    import('../../migrations/index.js'),
  ]);
  const { config } = db.orm;
  if (!config.get('migrations').migrationsList) {
    config.set('migrations', { ...config.get('migrations'), migrationsList });
    Migrator.register(db.orm);
  }
  return db.orm.migrator as Migrator;
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
