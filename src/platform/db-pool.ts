import type { ClientConfig, PoolClient as PgPoolClient, Pool } from 'pg';
import pg from './pg-driver.js';
import type { PlatformConfig } from './platform-config.js';
import type { PooledConnection } from './statement-runners.js';

/**
 * The service's pool of database connections: node-pg's own `pg.Pool`, with the bounds on
 * connecting, on each query and on waiting for a connection, and the discarding of a connection a
 * timed-out query left busy. MikroORM and knex are not loaded for it: they cost a process about
 * 25 MiB of RSS for a pool (docs/performance.md, "Process memory and start time"), and MikroORM
 * only migrates (migrate.ts, orm-config.ts).
 */

/** The settings the database is opened with (DATA_DIR: where the embedded database lives). */
export type DatabaseSettings = Pick<
  PlatformConfig,
  | 'DATA_DIR'
  | 'DATABASE_URL'
  | 'DATABASE_POOL_SIZE'
  | 'DATABASE_CONNECT_TIMEOUT_MS'
  | 'DATABASE_QUERY_TIMEOUT_MS'
>;

/** Where the database is: a Postgres URL, or the embedded database's unix socket. */
export type ConnectionTarget =
  | { connectionString: string }
  | { host: string; port: number; user: string; database: string };

/**
 * Bounds on waiting for the database, so an outage answers 503 within about a second instead of
 * hanging requests on a silent network. `queryMs` 0 means no query bound.
 */
export interface Timeouts {
  connectMs: number;
  queryMs: number;
  /** How long a caller may wait for a pooled connection when every one is lent out. */
  acquireMs: number;
}

/**
 * The wait for a pooled connection where queries have no bound (knex's default, which the pool
 * had before): behind slow but healthy queries a caller may legitimately wait that long.
 */
const UNBOUNDED_ACQUIRE_MS = 60_000;

/**
 * PGlite runs inside this process, so there is no network to go silent, and while it computes the
 * event loop is blocked: a client-side timer would fire only afterwards and fail a query that had
 * finished. So the embedded database gets no query bound, and a connect bound that is only there to
 * turn a wedged socket into an error.
 */
export const embeddedTimeouts: Timeouts = { connectMs: 10_000, queryMs: 0, acquireMs: UNBOUNDED_ACQUIRE_MS };

export function serverTimeouts(config: DatabaseSettings): Timeouts {
  const connectMs = config.DATABASE_CONNECT_TIMEOUT_MS;
  const queryMs = config.DATABASE_QUERY_TIMEOUT_MS;
  // Waiting longer for a pooled connection than it takes to open one and run a query only queues
  // callers behind an outage; under ordinary load connections are handed out in milliseconds.
  return { connectMs, queryMs, acquireMs: queryMs > 0 ? connectMs + queryMs : UNBOUNDED_ACQUIRE_MS };
}

/** How long an idle connection stays open (the previous pool's, tarn's, default). */
const IDLE_MS = 30_000;

/** The pool now: connections lent out, connections idle, and callers waiting for one. */
export interface PoolUsage {
  inUse: number;
  idle: number;
  waiting: number;
}

/** A pooled node-pg client as the pool lends it. */
export type PoolClient = PgPoolClient & { readyForQuery?: boolean };

/**
 * A pooled pg client is idle when it waits for nothing. One that is not was left behind by a query
 * that timed out on the client: its connection is presumed dead (or still busy), so the pool
 * discards it and opens a fresh one rather than queueing the next query behind it forever.
 */
export const isIdle = (client: { readyForQuery?: boolean }): boolean => client.readyForQuery === true;

export class ConnectionPool {
  private pool: Pool;

  constructor(
    readonly target: ConnectionTarget,
    readonly size: number,
    readonly timeouts: Timeouts,
  ) {
    this.pool = this.open();
  }

  private open(): Pool {
    const { connectMs, queryMs, acquireMs } = this.timeouts;
    // Each client connects within connectMs; pg.Pool hands its own connectionTimeoutMillis to its
    // clients too, so they get theirs through a Client of their own and the pool's bounds the wait
    // for a connection when every one is lent out.
    const clientOptions: ClientConfig = {
      ...this.target,
      connectionTimeoutMillis: connectMs,
      // The server's statement_timeout matches the client's query_timeout, so work the client gave
      // up on stops too.
      ...(queryMs > 0 ? { query_timeout: queryMs, statement_timeout: queryMs } : {}),
    };
    class BoundedClient extends pg.Client {
      constructor() {
        super(clientOptions);
        // A connection that drops while lent out, between two statements, is reported as an
        // 'error' event, which would end the process without a listener (pg.Pool listens only
        // while the client is idle). The statement that uses it next fails instead, and the pool
        // discards it when it comes back (no longer queryable).
        this.on('error', () => {});
      }
    }
    const pool = new pg.Pool({
      ...clientOptions,
      Client: BoundedClient,
      max: this.size,
      min: 0,
      idleTimeoutMillis: IDLE_MS,
      connectionTimeoutMillis: Math.max(acquireMs, connectMs),
    });
    // An idle connection the server closed (a restart, an administrator's kill) is removed by the
    // pool, which then reports it here: without a listener that would end the process.
    pool.on('error', () => {});
    return pool;
  }

  acquire(): Promise<PoolClient> {
    return this.pool.connect() as Promise<PoolClient>;
  }

  /** Returns a connection to the pool, or closes it when a timed-out query left it busy. */
  async release(connection: PooledConnection): Promise<void> {
    const client = connection as PoolClient;
    client.release(isIdle(client) ? undefined : true);
  }

  usage(): PoolUsage {
    const { totalCount, idleCount, waitingCount } = this.pool;
    return { inUse: totalCount - idleCount, idle: idleCount, waiting: waitingCount };
  }

  close(): Promise<void> {
    return this.pool.ending ? Promise.resolve() : this.pool.end();
  }
}
