import pg from 'pg';
import type { Database } from './db.js';

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
 */
export async function migrateUp(db: Database, databaseUrl?: string): Promise<string[]> {
  const apply = async () => (await db.orm.migrator.up()).map((m) => m.name);
  if (db.kind === 'embedded' || !databaseUrl) return apply();
  const lockClient = new pg.Client({ connectionString: databaseUrl });
  await lockClient.connect();
  try {
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    return await apply();
  } finally {
    await lockClient.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(() => {});
    await lockClient.end();
  }
}

export async function migrationStatus(db: Database): Promise<MigrationStatus> {
  const executed = await db.orm.migrator.getExecutedMigrations();
  const pending = await db.orm.migrator.getPendingMigrations();
  return { executed: executed.map((m) => m.name), pending: pending.map((m) => m.name) };
}
