import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { PostgreSqlPlatform } from '@mikro-orm/postgresql';
import pg from 'pg';
import { inject } from 'vitest';
import { configFrom } from '../../src/config.js';
import { type DataAccess, rootHandle, runStatement } from '../../src/platform/data-access.js';
import { type Database, openDatabase } from '../../src/platform/db.js';
import { park, rememberTemplate, takeParked } from './embedded-reuse.js';
import { adminQuery, withDatabase } from './global-setup.js';

/**
 * How long a test's statement may run on Postgres. Test files share one server, and a file's
 * clone being created (CREATE DATABASE ... TEMPLATE) stalls other files' statements past the
 * service's 1 s default now and then on a loaded machine: a register answered 503. The tests of
 * timeouts open their databases with their own.
 */
export const TEST_QUERY_TIMEOUT_MS = 10_000;

export interface TestDatabase {
  db: Database;
  /** DATABASE_URL of the clone in Postgres mode, undefined in embedded mode. */
  url: string | undefined;
  drop(): Promise<void>;
}

/**
 * A migrated database of its own for one test file: a clone of the run's template, so files can
 * run in parallel without seeing each other's rows. Real PGlite or real Postgres, never a mock.
 * In embedded mode the clone may be the one a previous file of this worker dropped, reset to the
 * template's state (test/helpers/embedded-reuse.ts).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) return postgresDatabase(serverUrl, 'atrium_t', inject('postgresTemplateDb'));
  const db = (await takeParked()) ?? (await openTemplateClone());
  return { db, url: undefined, drop: () => park(db) };
}

async function openTemplateClone(): Promise<Database> {
  const template = await readFile(inject('embeddedTemplatePath'));
  const db = await openDatabase(configFrom({}), {
    embedded: { loadDataDir: new Blob([template], { type: 'application/x-tar' }) },
  });
  await rememberTemplate(db);
  return db;
}

/**
 * One pooled connection on a file's database, so consecutive statements share it (and its
 * prepared statements): the embedded database itself (one session), on Postgres a second handle
 * on the clone opened with DATABASE_POOL_SIZE 1. `close` closes only what this opened.
 */
export async function singleConnection(
  testDb: TestDatabase,
): Promise<{ db: Database; close(): Promise<void> }> {
  if (!testDb.url) return { db: testDb.db, close: async () => {} };
  const db = await openDatabase(configFrom({ DATABASE_URL: testDb.url, DATABASE_POOL_SIZE: 1 }));
  return { db, close: () => db.close() };
}

/** An empty, unmigrated database (for migration tests): in-memory PGlite from the run's empty dump, or a new Postgres database. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) return postgresDatabase(serverUrl, 'atrium_e');
  const empty = await readFile(inject('embeddedEmptyPath'));
  const db = await openDatabase(configFrom({}), {
    embedded: { loadDataDir: new Blob([empty], { type: 'application/x-tar' }) },
  });
  return { db, url: undefined, drop: () => db.close() };
}

/** A new database on the Postgres server, optionally cloned from a template, dropped by `drop()`. */
async function postgresDatabase(serverUrl: string, prefix: string, template?: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}${template ? ` template ${template}` : ''}`);
  const url = withDatabase(serverUrl, name);
  const db = await openDatabase(
    configFrom({ DATABASE_URL: url, DATABASE_QUERY_TIMEOUT_MS: TEST_QUERY_TIMEOUT_MS }),
  );
  return {
    db,
    url,
    async drop() {
      await db.close();
      await adminQuery(serverUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

/**
 * How queryRows writes `?` parameters into its SQL and reads rows: as MikroORM's `execute` did,
 * which the tests were written against (values formatted into the text, `in (?)` taking a list;
 * dates, timestamps and intervals returned as Postgres' text). Only tests load MikroORM for it.
 */
const formatter = new PostgreSqlPlatform();
const textDates = new pg.TypeOverrides();
for (const oid of [1082, 1114, 1184, 1186]) textDates.setTypeParser(oid, (text: string) => text);
const TEXT_ARRAY = 1009 as Parameters<typeof pg.types.getTypeParser>[0];
const textArray = pg.types.getTypeParser(TEXT_ARRAY);
for (const oid of [1182, 1115, 1185, 1187]) textDates.setTypeParser(oid, textArray);

/**
 * Runs raw SQL on a test database, for assertions on what was (or was not) written: on a
 * connection of its pool, `?` standing for each of `params`. Several statements separated by
 * semicolons answer a list of row lists.
 */
export async function queryRows<Row = Record<string, unknown>>(
  db: Database,
  sql: string,
  params: unknown[] = [],
): Promise<Row[]> {
  const connection = await db.pool.acquire();
  try {
    const result = (await connection.query({ text: formatter.formatQuery(sql, params), types: textDates })) as
      | pg.QueryResult
      | pg.QueryResult[];
    return (Array.isArray(result) ? result.map((each) => each.rows) : result.rows) as Row[];
  } finally {
    await db.pool.release(connection);
  }
}

/** A user row written directly, for tests of the schema below any service; returns its id. */
export async function insertUser(db: Database): Promise<string> {
  const id = randomUUID();
  await queryRows(
    db,
    `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
     values (?, ?, 'x', now(), now())`,
    [id, `u${id.slice(0, 8)}`],
  );
  return id;
}

/**
 * How many statements on this Postgres database wait for a row another transaction locked: a test
 * holding a transaction open sees its racers arrive. PGlite runs one session, where the racers
 * wait for the pool's connection instead.
 */
export function rowLockWaiters(db: Database): Promise<number> {
  return lockWaiters(db, 'transactionid');
}

/**
 * How many sessions on this Postgres database wait for a lock: of one type (pg_locks' `locktype`),
 * or of any (a row's, a named lock's, a row's place in the queue of its waiters).
 */
export async function lockWaiters(db: Database, locktype?: 'transactionid'): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    db,
    `select count(distinct l.pid)::integer as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
     where not l.granted and (?::text is null or l.locktype = ?) and a.datname = current_database()`,
    [locktype ?? null, locktype ?? null],
  );
  return row?.n ?? 0;
}

/** A statement some work ran: its text and parameters. */
export interface RanStatement {
  sql: string;
  params: readonly unknown[];
}

/**
 * A root handle on the database of `data` that records each statement run through it, for tests
 * of what some work reads. Each statement runs on a connection of its own: for work outside
 * transactions.
 */
export function recordingData(data: () => DataAccess): { handle: DataAccess; ran: RanStatement[] } {
  const ran: RanStatement[] = [];
  const handle = rootHandle({
    acquire: async () => ({}) as never,
    release: async () => {},
    run: (_connection, sql, params) => {
      ran.push({ sql, params });
      return runStatement(data(), sql, params);
    },
    single: false,
  });
  return { handle, ran };
}

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/**
 * How many rows of `table` a read-only statement reads as Postgres runs it now (EXPLAIN ANALYZE):
 * the rows its scans of the table return and those they read and dropped by a filter.
 */
export async function rowsRead(data: DataAccess, statement: RanStatement, table: string): Promise<number> {
  const [row] = (await runStatement(
    data,
    `explain (analyze, format json) ${statement.sql}`,
    statement.params,
  )) as {
    'QUERY PLAN': string | { Plan: PlanNode }[];
  }[];
  const raw = row?.['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const count = (node: PlanNode): number =>
    (node['Relation Name'] === table
      ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) +
        (node['Rows Removed by Filter'] ?? 0) +
        (node['Rows Removed by Index Recheck'] ?? 0)
      : 0) + (node.Plans ?? []).reduce((sum, child) => sum + count(child), 0);
  return plan.reduce((sum, { Plan }) => sum + count(Plan), 0);
}
