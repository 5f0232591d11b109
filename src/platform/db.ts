import { join } from 'node:path';
import { type PGlite, protocol } from '@electric-sql/pglite';
import type { EntitySchema } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type EntityManager, type Knex, MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { migrationsList } from '../../migrations/index.js';
import type { Config } from '../config.js';
import { type DataAccess, leanEntityManagerOf } from './data-handle.js';
import { type EmbeddedOptions, type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.js';

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
  const em = leanEntityManagerOf(on);
  const run = runners.get(em.getDriver());
  if (!run)
    throw new Error('executeBound: this entity manager belongs to no database opened by openDatabase');
  const { client } = em.getTransactionContext<Knex.Transaction>() ?? em.getKnex();
  const connection = (await client.acquireConnection()) as PooledConnection;
  try {
    return (await run(connection, sql, params)) as Row[];
  } finally {
    await client.releaseConnection(connection);
  }
}

interface PooledConnection {
  query(config: { name?: string; text: string; values: unknown[]; types: typeof pg.types }): Promise<{
    rows: unknown[];
  }>;
}

type Runner = (connection: PooledConnection, sql: string, params: readonly unknown[]) => Promise<unknown[]>;

/** One per open database, reached from any of its entity managers through their driver. */
const runners = new WeakMap<object, Runner>();

/**
 * Statement texts prepared under a name; repositories use a handful of fixed texts, so the bound
 * only keeps text built at run time from growing the map (such text runs unnamed).
 */
const MAX_NAMED_STATEMENTS = 500;

function postgresRunner(): Runner {
  const names = new Map<string, string>();
  return async (connection, text, params) => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `atrium_${names.size}`;
      names.set(text, name);
    }
    // pg's default type parsers, as PGlite's: MikroORM gives its connections parsers that keep
    // dates as strings for its own hydration.
    return (await connection.query({ ...(name ? { name } : {}), text, values: [...params], types: pg.types }))
      .rows;
  };
}

/**
 * PGlite is one database session, so whoever holds the pool's only connection owns it: the
 * caller holds it (its own transaction's, or one acquired for this statement), so no other
 * transaction can be open on the session. The statement goes to PGlite in process, without the
 * wire protocol's trip through the socket, and prepared once under a name as on Postgres: a
 * prepared statement is then one Bind/Execute/Sync call into PGlite instead of the six
 * `pglite.query` makes (parse and describe each time), two to three times less work per statement.
 */
function embeddedRunner(pglite: PGlite): Runner {
  const prepared = new Map<string, Promise<PreparedStatement>>();
  let names = 0;
  const exchange = (message: Uint8Array) =>
    pglite.runExclusive(() => pglite.execProtocolStream(message)) as Promise<BackendMessage[]>;
  const prepare = async (text: string): Promise<PreparedStatement> => {
    const name = `atrium_${names++}`;
    const { serialize } = protocol;
    const described = await exchange(
      Buffer.concat([
        serialize.parse({ name, text, types: [] }),
        serialize.describe({ type: 'S', name }),
        serialize.sync(),
      ]),
    );
    const messageNamed = (kind: string) => described.find((m) => m.name === kind);
    return {
      name,
      paramTypes: messageNamed('parameterDescription')?.dataTypeIDs ?? [],
      // A statement that returns no rows is described by NoData instead: no fields.
      fields: (messageNamed('rowDescription')?.fields ?? []) as PreparedStatement['fields'],
    };
  };
  // Concurrent first uses of a text share one preparation; a failed one is tried again next time.
  const preparedOnce = (text: string) => {
    let statement = prepared.get(text);
    if (!statement && prepared.size < MAX_NAMED_STATEMENTS) {
      statement = prepare(text);
      prepared.set(text, statement);
      statement.catch(() => prepared.delete(text));
    }
    return statement;
  };
  return async (_heldConnection, text, params) => {
    const statement = await preparedOnce(text);
    if (!statement) return (await pglite.query(text, [...params])).rows;
    const values = params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const serializer = pglite.serializers[statement.paramTypes[index] as number];
      if (serializer) return serializer(value);
      return value instanceof Date ? value.toISOString() : String(value);
    });
    const messages = await exchange(bindExecuteSync(statement.name, values));
    return rowsOf(messages, statement.fields, pglite.parsers);
  };
}

interface PreparedStatement {
  name: string;
  paramTypes: number[];
  /** The result's columns, from the statement's description: executions need not describe again. */
  fields: { name: string; dataTypeID: number }[];
}

/** The parts of PGlite's parsed backend messages read here. */
interface BackendMessage {
  name: string;
  dataTypeIDs?: number[];
  fields?: ({ name: string; dataTypeID: number } | string | null)[];
}

/** Execute (unnamed portal, every row) then Sync, the same bytes for every statement. */
const EXECUTE_AND_SYNC = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

/**
 * Bind of the named statement to the unnamed portal, every parameter and column as text, then
 * EXECUTE_AND_SYNC, in one buffer sized up front. PGlite's serializer grows a 256-byte buffer
 * and copies it for each parameter, which made a 1 KiB jsonb upsert spend 7% of its CPU binding.
 */
function bindExecuteSync(statement: string, values: readonly (string | null)[]): Buffer {
  let length = 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + 2 + 2;
  for (const value of values) length += 4 + (value === null ? 0 : Buffer.byteLength(value));
  const message = Buffer.allocUnsafe(1 + length + EXECUTE_AND_SYNC.length);
  let at = message.writeUInt8(0x42, 0);
  at = message.writeInt32BE(length, at);
  at = message.writeUInt8(0, at); // the unnamed portal
  at += message.write(statement, at);
  at = message.writeUInt8(0, at);
  at = message.writeInt16BE(0, at); // parameters in text format
  at = message.writeInt16BE(values.length, at);
  for (const value of values) {
    if (value === null) {
      at = message.writeInt32BE(-1, at);
      continue;
    }
    const lengthAt = at;
    at += 4;
    const bytes = message.write(value, at);
    message.writeInt32BE(bytes, lengthAt);
    at += bytes;
  }
  at = message.writeInt16BE(0, at); // columns in text format
  EXECUTE_AND_SYNC.copy(message, at);
  return message;
}

/** The data rows as objects keyed by column name, each value through PGlite's parser for its type. */
function rowsOf(
  messages: readonly BackendMessage[],
  fields: PreparedStatement['fields'],
  parsers: PGlite['parsers'],
): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const message of messages) {
    if (message.name !== 'dataRow') continue;
    const values = message.fields as (string | null)[];
    const row: Record<string, unknown> = {};
    fields.forEach(({ name, dataTypeID }, index) => {
      const value = values[index] ?? null;
      const parser = parsers[dataTypeID];
      row[name] = value === null || !parser ? value : parser(value, dataTypeID);
    });
    rows.push(row);
  }
  return rows;
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
