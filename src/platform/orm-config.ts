import { defineConfig, MikroORM } from '@mikro-orm/postgresql';
import type { EmbeddedPostgres } from './embedded-postgres.js';
import type { PlatformConfig } from './platform-config.js';

/**
 * How MikroORM opens the database's pool (driver options, timeouts, the pool's check of a
 * connection) and how it migrates. No statement goes through it: they run on its pool (db.ts).
 */

/** Where the names of the applied migrations are recorded. */
export const MIGRATIONS_TABLE = 'atrium_migrations';

/** The settings the database is opened with (DATA_DIR: where the embedded database lives). */
export type DatabaseSettings = Pick<
  PlatformConfig,
  | 'DATA_DIR'
  | 'DATABASE_URL'
  | 'DATABASE_POOL_SIZE'
  | 'DATABASE_CONNECT_TIMEOUT_MS'
  | 'DATABASE_QUERY_TIMEOUT_MS'
>;

/** MikroORM on the Postgres server of DATABASE_URL, with the configured pool and bounds. */
export function openServerOrm(config: DatabaseSettings): Promise<MikroORM> {
  return MikroORM.init(
    ormOptions({
      clientUrl: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      timeouts: serverTimeouts(config),
    }),
  );
}

/** MikroORM on the embedded database's socket: one connection, as PGlite is one session. */
export function openEmbeddedOrm(embedded: EmbeddedPostgres): Promise<MikroORM> {
  return MikroORM.init(
    ormOptions({
      host: embedded.socketDir,
      port: embedded.port,
      poolSize: 1,
      dbName: 'postgres',
      timeouts: embeddedTimeouts,
    }),
  );
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

function serverTimeouts(config: DatabaseSettings): Timeouts {
  const connectMs = config.DATABASE_CONNECT_TIMEOUT_MS;
  const queryMs = config.DATABASE_QUERY_TIMEOUT_MS;
  // Waiting longer for a pooled connection than it takes to open one and run a query only queues
  // callers behind an outage; under ordinary load connections are handed out in milliseconds.
  return { connectMs, queryMs, acquireMs: queryMs > 0 ? connectMs + queryMs : KNEX_DEFAULT_ACQUIRE_MS };
}

interface ConnectionTarget {
  clientUrl?: string;
  host?: string;
  port?: number;
  dbName?: string;
  poolSize: number;
  timeouts: Timeouts;
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
    // The Migrator and the migrations load when something is to be migrated (migrate.ts).
    migrations: {
      tableName: MIGRATIONS_TABLE,
      transactional: true,
      // All pending migrations apply in one transaction, so a failure leaves the schema as it was.
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    // No entities: statements are SQL on the pool (executeBound), and migrations need none.
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ensureDatabase: false,
    debug: false,
  });
}
