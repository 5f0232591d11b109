import { join } from 'node:path';
import type { EntitySchema } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type EntityManager, type Knex, MikroORM } from '@mikro-orm/postgresql';
import { migrationsList } from '../../migrations/index.js';
import type { Config } from '../config.js';
import {
  type DataAccess,
  type HeldConnection,
  heldConnectionOf,
  leanEntityManagerOf,
} from './data-handle.js';
import { type EmbeddedOptions, type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.js';
import { type NamedSql, valuesOf } from './named-sql.js';
import { embeddedRunner, type PooledConnection, postgresRunner, type Runner } from './statement-runners.js';

export type Orm = MikroORM;

export interface Database {
  orm: Orm;
  /** `postgres` with DATABASE_URL, `embedded` (PGlite) otherwise. */
  kind: 'postgres' | 'embedded';
  /** Set for the embedded database only. */
  embedded?: EmbeddedPostgres;
  /** Connections in the pool: DATABASE_POOL_SIZE, or 1 for the embedded database (one session). */
  poolSize: number;
  /** Throws when the database does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /**
   * The entities the ORM manages: the modules' (`entitiesOf`), passed in so the platform knows
   * no module. Migrations and raw SQL need none.
   */
  entities?: readonly EntitySchema[];
  /** Embedded only: start from this PGlite dump instead of DATA_DIR (tests use an in-memory clone). */
  embedded?: EmbeddedOptions;
}

/**
 * Bounds on waiting for the database, so an outage answers 503 within about a second instead of
 * hanging requests on a silent network. `queryMs` 0 means no query bound.
 */
interface Timeouts {
  connectMs: number;
  queryMs: number;
  /** How long a caller may wait for a pooled connection, creating one included. */
  acquireMs: number;
}

/**
 * knex's own default wait for a pooled connection, kept where queries have no bound: behind slow
 * but healthy queries a caller may legitimately wait that long.
 */
const KNEX_DEFAULT_ACQUIRE_MS = 60_000;

/**
 * PGlite runs inside this process, so there is no network to go silent, and while it computes the
 * event loop is blocked: a client-side timer would fire only afterwards and fail a query that had
 * finished. So the embedded database gets no query bound, and a connect bound that is only there to
 * turn a wedged socket into an error.
 */
const embeddedTimeouts: Timeouts = { connectMs: 10_000, queryMs: 0, acquireMs: KNEX_DEFAULT_ACQUIRE_MS };

function serverTimeouts(config: Config): Timeouts {
  const connectMs = config.DATABASE_CONNECT_TIMEOUT_MS;
  const queryMs = config.DATABASE_QUERY_TIMEOUT_MS;
  // Waiting longer for a pooled connection than it takes to open one and run a query only queues
  // callers behind an outage; under ordinary load connections are handed out in milliseconds.
  return { connectMs, queryMs, acquireMs: queryMs > 0 ? connectMs + queryMs : KNEX_DEFAULT_ACQUIRE_MS };
}

export async function openDatabase(config: Config, options: OpenDatabaseOptions = {}): Promise<Database> {
  if (config.DATABASE_URL) {
    const orm = await MikroORM.init(
      ormOptions({
        clientUrl: config.DATABASE_URL,
        poolSize: config.DATABASE_POOL_SIZE,
        timeouts: serverTimeouts(config),
        entities: options.entities ?? [],
      }),
    );
    return wrap(orm, 'postgres', config.DATABASE_POOL_SIZE);
  }
  const embedded = await startEmbeddedPostgres(
    options.embedded ?? { dataDir: join(config.DATA_DIR, 'pgdata') },
  );
  try {
    const orm = await MikroORM.init(
      ormOptions({
        host: embedded.socketDir,
        port: embedded.port,
        poolSize: 1,
        dbName: 'postgres',
        timeouts: embeddedTimeouts,
        entities: options.entities ?? [],
      }),
    );
    return wrap(orm, 'embedded', 1, embedded);
  } catch (error) {
    await embedded.close();
    throw error;
  }
}

function wrap(orm: Orm, kind: Database['kind'], poolSize: number, embedded?: EmbeddedPostgres): Database {
  runners.set(orm.em.getDriver(), embedded ? embeddedRunner(embedded.pglite) : postgresRunner());
  return {
    orm,
    kind,
    poolSize,
    ...(embedded ? { embedded } : {}),
    async ping() {
      await orm.em.getConnection().execute('select 1');
    },
    async close() {
      await orm.close(true);
      await embedded?.close();
    },
  };
}

interface ConnectionTarget {
  clientUrl?: string;
  host?: string;
  port?: number;
  dbName?: string;
  poolSize: number;
  timeouts: Timeouts;
  entities: readonly EntitySchema[];
}

/**
 * A pooled pg client is idle when it waits for nothing. One that is not was left behind by a query
 * that timed out on the client: its connection is presumed dead (or still busy), so the pool
 * discards it and opens a fresh one rather than queueing the next query behind it forever.
 */
function isIdle(connection: { readyForQuery?: boolean }): boolean {
  return connection.readyForQuery === true;
}

function ormOptions(target: ConnectionTarget) {
  const { connectMs, queryMs, acquireMs } = target.timeouts;
  return defineConfig({
    ...(target.clientUrl ? { clientUrl: target.clientUrl } : {}),
    ...(target.host ? { host: target.host, port: target.port, user: 'postgres', dbName: target.dbName } : {}),
    pool: { min: 0, max: target.poolSize },
    // Merged by MikroORM into the knex config: `connection` goes to each pg Client. The server's
    // statement_timeout matches the client's query_timeout, so work the client gave up on stops too.
    driverOptions: {
      connection: {
        connectionTimeoutMillis: connectMs,
        ...(queryMs > 0 ? { query_timeout: queryMs, statement_timeout: queryMs } : {}),
      },
      acquireConnectionTimeout: acquireMs,
      pool: { validate: isIdle },
    },
    entities: [...target.entities],
    extensions: [Migrator],
    migrations: {
      tableName: 'atrium_migrations',
      migrationsList,
      transactional: true,
      // All pending migrations apply in one transaction, so a failure leaves the schema as it was.
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    // Entities are declared with explicit types, so no reflection or source scanning happens at startup.
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ensureDatabase: false,
    debug: false,
  });
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
 * parameters, run on a connection of the ORM's own pool (the caller's transaction when there is
 * one) without the ORM's query building, hydration or unit of work. MikroORM's `execute` formats
 * every parameter into the SQL text, and knex's `raw` re-parses the SQL and re-plans it on every
 * call; here Postgres parses and plans each distinct text once per connection (a named prepared
 * statement), and the embedded database is queried in process instead of over its socket.
 * Results are plain rows as the driver parses them: `timestamptz` as Date, `jsonb` as objects,
 * arrays of built-in types as arrays (cast enum arrays to `text[]`). Repositories pass a handle
 * (a call's never forks for it); the platform's own jobs and tests may pass an entity manager.
 */
export async function executeBound<Row>(
  on: DataAccess | EntityManager,
  sql: string,
  params: readonly unknown[],
): Promise<Row[]> {
  const held = heldConnectionOf(on);
  if (held) return (await held.run(sql, params)) as Row[];
  const em = leanEntityManagerOf(on);
  const run = runnerOf(em);
  const { client } = em.getTransactionContext<Knex.Transaction>() ?? em.getKnex();
  const connection = (await client.acquireConnection()) as PooledConnection;
  try {
    return (await run(connection, sql, params)) as Row[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/** executeBound for a statement with named parameters (named-sql.ts), its values taken by name. */
export function executeNamed<Row, Params extends object>(
  on: DataAccess | EntityManager,
  statement: NamedSql<Params>,
  params: Params,
): Promise<Row[]> {
  return executeBound<Row>(on, statement.text, valuesOf(statement, params));
}

/** One per open database, reached from any of its entity managers through their driver. */
const runners = new WeakMap<object, Runner>();

function runnerOf(em: EntityManager): Runner {
  const run = runners.get(em.getDriver());
  if (!run)
    throw new Error('executeBound: this entity manager belongs to no database opened by openDatabase');
  return run;
}

/**
 * A connection of the pool of `em`'s database, held until released, its statements run as
 * executeBound runs them: a lean transaction's (src/platform/data-access.ts).
 */
export async function holdConnection(em: EntityManager): Promise<HeldConnection> {
  const run = runnerOf(em);
  const { client } = em.getKnex();
  const connection = (await client.acquireConnection()) as PooledConnection;
  let released = false;
  return {
    run: (sql, params) => run(connection, sql, params),
    release: () => {
      released = true;
      return client.releaseConnection(connection);
    },
    get released() {
      return released;
    },
  };
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
