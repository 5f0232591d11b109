import pg from 'pg';
import { configFrom } from '../config.js';
import { type Database, openDatabase } from './db.js';

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
  return (await db.orm.migrator.up()).map((m) => m.name);
}

export async function migrationStatus(db: Database): Promise<MigrationStatus> {
  const executed = await db.orm.migrator.getExecutedMigrations();
  const pending = await db.orm.migrator.getPendingMigrations();
  return { executed: executed.map((m) => m.name), pending: pending.map((m) => m.name) };
}
