import { join } from 'node:path';
import { type DataAccess, rootHandle, runStatement } from './data-access.js';
import {
  ConnectionPool,
  type ConnectionTarget,
  type DatabaseSettings,
  embeddedTimeouts,
  type PoolUsage,
  serverTimeouts,
} from './db-pool.js';
import type { EmbeddedOptions, EmbeddedPostgres } from './embedded-postgres.js';
import { type NamedSql, valuesOf } from './named-sql.js';
import type { PipelineRunner, Runner } from './statement-runners.js';
import { postgresRunner } from './statement-runners.js';

export interface Database {
  /** The root handle every statement starts from: `ctx.data` of every call, and jobs', commands', tests'. */
  data: DataAccess;
  /** `postgres` with DATABASE_URL, `embedded` (PGlite) otherwise. */
  kind: 'postgres' | 'embedded';
  /** Set for the embedded database only. */
  embedded?: EmbeddedPostgres;
  /**
   * The pool every statement's connection comes from (db-pool.ts); `pool.target` is where the
   * database is, for what opens connections of its own (migrate.ts).
   */
  pool: ConnectionPool;
  /** Connections in the pool: DATABASE_POOL_SIZE, or 1 for the embedded database (one session). */
  poolSize: number;
  /** The pool now: connections lent out, connections idle, and callers waiting for one. */
  poolUsage(): PoolUsage;
  /** Throws when the database does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Embedded only: start from this PGlite dump instead of DATA_DIR (tests use an in-memory clone). */
  embedded?: EmbeddedOptions;
}

/** The database of DATABASE_URL, or the embedded one under DATA_DIR (or from `options.embedded`). */
export async function openDatabase(config: DatabaseSettings, options: OpenDatabaseOptions = {}) {
  if (config.DATABASE_URL) {
    const pool = new ConnectionPool(
      { connectionString: config.DATABASE_URL },
      config.DATABASE_POOL_SIZE,
      serverTimeouts(config),
    );
    return wrap(pool, 'postgres', postgresRunner());
  }
  // Imported here: a process on Postgres need not load PGlite (a megabyte of heap, more of code).
  const [{ startEmbeddedPostgres }, { embeddedRunner }] = await Promise.all([
    import('./embedded-postgres.js'),
    import('./embedded-protocol.js'),
  ]);
  const embedded = await startEmbeddedPostgres(
    options.embedded ?? { dataDir: join(config.DATA_DIR, 'pgdata') },
  );
  // One connection, as PGlite is one session: whoever holds it owns the database.
  const target: ConnectionTarget = {
    host: embedded.socketDir,
    port: embedded.port,
    user: 'postgres',
    database: 'postgres',
  };
  const pool = new ConnectionPool(target, 1, embeddedTimeouts);
  return wrap(pool, 'embedded', { run: embeddedRunner(embedded.pglite) }, embedded);
}

function wrap(
  pool: ConnectionPool,
  kind: Database['kind'],
  // The embedded database runs in process: it has no round trips to save, so no pipeline.
  { run, pipeline }: { run: Runner; pipeline?: PipelineRunner },
  embedded?: EmbeddedPostgres,
): Database {
  const data = rootHandle({
    acquire: () => pool.acquire(),
    release: (connection) => pool.release(connection),
    run,
    single: pool.size === 1,
    ...(pipeline ? { pipeline } : {}),
  });
  return {
    data,
    kind,
    pool,
    poolSize: pool.size,
    poolUsage: () => pool.usage(),
    ...(embedded ? { embedded } : {}),
    async ping() {
      await runStatement(data, 'select 1', []);
    },
    async close() {
      await pool.close();
      await embedded?.close();
    },
  };
}

/**
 * Holds a transaction-scoped advisory lock named by `key` (its 64-bit text hash) until the
 * transaction of `data` ends: writes that must count and insert as one step take turns on it.
 */
export async function lockNamed(data: DataAccess, key: string): Promise<void> {
  await executeBound(data, 'select pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}

/** `lockNamed` without waiting: false, and no lock, when another transaction holds it. */
export async function tryLockNamed(data: DataAccess, key: string): Promise<boolean> {
  const [row] = await executeBound<{ locked: boolean }>(
    data,
    'select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as locked',
    [key],
  );
  return row?.locked === true;
}

/**
 * The lean path for repository statements: SQL with `$1..$n` placeholders, its values bound as
 * parameters, run on a connection of the database's pool (the handle's transaction when it is in
 * one). Postgres parses and plans each distinct text once per connection (a named prepared
 * statement), and the embedded database is queried in process instead of over its socket.
 * Results are plain rows as the driver parses them: `timestamptz` as Date, `jsonb` as objects,
 * arrays of built-in types as arrays (cast enum arrays to `text[]`).
 */
export function executeBound<Row>(data: DataAccess, sql: string, params: readonly unknown[]): Promise<Row[]> {
  return runStatement(data, sql, params) as Promise<Row[]>;
}

/** executeBound for a statement with named parameters (named-sql.ts), its values taken by name. */
export function executeNamed<Row, Params extends object>(
  data: DataAccess,
  statement: NamedSql<Params>,
  params: Params,
): Promise<Row[]> {
  return executeBound<Row>(data, statement.text, valuesOf(statement, params));
}

/** SQLSTATE codes the services act on, as both drivers report them on `error.code`. */
export const SqlState = {
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  CHECK_VIOLATION: '23514',
} as const;

/** Whether a statement failed with this SQLSTATE (from executeBound on either database). */
export function hasSqlState(error: unknown, state: (typeof SqlState)[keyof typeof SqlState]): boolean {
  return (error as { code?: unknown } | null)?.code === state;
}
