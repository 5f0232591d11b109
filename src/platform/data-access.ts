import { AsyncLocalStorage } from 'node:async_hooks';
import { lostToConcurrentTransaction } from './errors.js';
import type { PipelineOutcome } from './statement-pipeline.js';
import type { PipelineRunner, PooledConnection, Runner, StatementText } from './statement-runners.js';

/** Isolation levels for `transaction`, as BEGIN names them. */
export const IsolationLevel = {
  READ_COMMITTED: 'read committed',
  REPEATABLE_READ: 'repeatable read',
  SERIALIZABLE: 'serializable',
} as const;
export type IsolationLevel = (typeof IsolationLevel)[keyof typeof IsolationLevel];

/** The database's pool as statements use it (db.ts builds it on db-pool.ts's). */
export interface StatementPool {
  acquire(): Promise<PooledConnection>;
  release(connection: PooledConnection): Promise<void>;
  run: Runner;
  /** One connection (the embedded database's): a transaction holding it leaves none to wait for. */
  single: boolean;
  /** Several statements in one round trip; without it they run one after another. */
  pipeline?: PipelineRunner;
}

declare const opaque: unique symbol;

/**
 * What a service holds to reach the database, opaque: it passes it to repository functions, other
 * modules' APIs and `transaction`; only repositories run statements with it (`executeBound`).
 */
export interface DataAccess {
  readonly [opaque]: never;
}

/** A statement issued inside `inOneRoundTrip`, waiting for the round trip that carries it. */
interface Pending extends StatementText {
  resolve(rows: unknown[]): void;
  reject(error: unknown): void;
}

/** A transaction's pooled connection, held until it ends (`released`), and its savepoints' depth. */
interface Held {
  pool: StatementPool;
  connection: PooledConnection;
  released: boolean;
  savepoints: number;
  /** The transaction's BEGIN, sent with its first statement (`begun` once it was). */
  begin: string;
  begun: boolean;
  /** Committed by `inOneRoundTrip`: no statement may follow, and runTransaction sends no COMMIT. */
  ended: boolean;
  /** The statements `inOneRoundTrip` is collecting. */
  batch?: Pending[];
  /** What runs once the transaction committed (`afterCommit`). */
  committed?: (() => void)[];
}

/** What a DataAccess is: the database's pool and, for a transaction's work, its connection. */
interface Handle {
  pool: StatementPool;
  held?: Held;
}

const asData = (handle: Handle) => handle as unknown as DataAccess;

/** The database's root handle: each statement runs on a connection acquired for it alone. */
export const rootHandle = (pool: StatementPool) => asData({ pool });

/**
 * On a pool of one connection, the transaction each async call chain runs in. A statement (or a
 * transaction) given the root handle inside a transaction's work would wait forever for the only
 * connection, which that transaction holds: it fails at once instead, naming the mistake
 * (`refuseInsideTransaction`), so tests on the embedded database catch it. Larger pools do not
 * track it, as AsyncLocalStorage turns on Node's promise hooks for the whole process and makes
 * every await dearer (a status update frame cost 60% more CPU with it); there the root handle
 * runs on a connection of its own, outside the transaction, as it says.
 */
const transactionScope = new AsyncLocalStorage<Held>();

function refuseInsideTransaction(pool: StatementPool): void {
  if (!pool.single) return;
  const scoped = transactionScope.getStore();
  if (scoped && !scoped.released && scoped.pool === pool)
    throw new Error(
      "The database's root handle was used inside a transaction's work, where it would wait forever for the transaction's connection: pass the transaction's handle.",
    );
}

const heldOf = (data: DataAccess): Held | undefined => (data as unknown as Handle).held;

/**
 * How many times a transaction runs when Postgres keeps rolling it back for a concurrent one (a
 * deadlock's victim, a serialization failure) before that error goes to the caller. The rollback
 * undid everything it wrote, so running it again is the retry its client would make, without the
 * round trip; a few runs get past a conflict, and one that persists answers 503 (`asAppError`).
 */
const RUNS_ON_CONFLICT = 3;

/**
 * Runs one statement for `data`: in its transaction, or on a connection acquired for it, where
 * it is a transaction of its own, run again when it loses to a concurrent one.
 */
export async function runStatement(data: DataAccess, sql: string, params: readonly unknown[]) {
  const held = heldOf(data);
  if (held) return runHeld(held, sql, params);
  const { pool } = data as unknown as Handle;
  refuseInsideTransaction(pool);
  for (let run = 1; ; run++) {
    const connection = await pool.acquire();
    try {
      return await pool.run(connection, sql, params);
    } catch (error) {
      if (run === RUNS_ON_CONFLICT || !lostToConcurrentTransaction(error)) throw error;
    } finally {
      await pool.release(connection);
    }
  }
}

/**
 * Runs a statement in the held transaction: collected when `inOneRoundTrip` is gathering them, and
 * the transaction's first statement goes in one round trip with its BEGIN.
 */
function runHeld(held: Held, sql: string, params: readonly unknown[]): Promise<unknown[]> {
  if (held.ended) throw new Error('A statement was issued after its transaction committed.');
  const { batch } = held;
  if (batch) return new Promise((resolve, reject) => batch.push({ sql, params, resolve, reject }));
  if (held.begun) return held.pool.run(held.connection, sql, params);
  held.begun = true;
  return inOrder(held, [
    { sql: held.begin, params: [] },
    { sql, params },
  ]).then((outcome) => {
    if (outcome.failed) throw outcome.failed.error;
    return outcome.rows[1] as unknown[];
  });
}

/** Statements on the held connection in one round trip, or one after another without a pipeline. */
async function inOrder(held: Held, statements: readonly StatementText[]): Promise<PipelineOutcome> {
  const { pool, connection } = held;
  if (pool.pipeline) return pool.pipeline(connection, statements);
  const rows: unknown[][] = [];
  for (const [index, { sql, params }] of statements.entries()) {
    try {
      rows.push(await pool.run(connection, sql, params));
    } catch (error) {
      return { rows, failed: { index, error } };
    }
  }
  return { rows };
}

/**
 * Sends the statements `issue` makes on `data` at once (each module function called in it must
 * start its statement before its first await) in one round trip, and with `commit` the COMMIT of
 * the transaction after them: statements whose values are all known up front cost one round trip
 * instead of one each. Each statement's promise settles as if it ran alone, up to the first that
 * fails (those after it did not run, and reject with its error). Outside a transaction, or inside
 * a savepoint (where `commit` is not this work's to send), `issue` runs as it would without it.
 */
export async function inOneRoundTrip<T>(
  data: DataAccess,
  issue: () => Promise<T>,
  { commit = false }: { commit?: boolean } = {},
): Promise<T> {
  const held = heldOf(data);
  if (!held || held.batch) return issue();
  const batch: Pending[] = [];
  held.batch = batch;
  let result: Promise<T>;
  try {
    result = issue();
  } finally {
    held.batch = undefined;
  }
  const leading = held.begun ? [] : [{ sql: held.begin, params: [] }];
  held.begun = true;
  const committing = commit && held.savepoints === 0;
  const outcome = await inOrder(held, [
    ...leading,
    ...batch,
    ...(committing ? [{ sql: 'commit', params: [] }] : []),
  ]);
  for (const [i, pending] of batch.entries()) {
    const index = i + leading.length;
    if (outcome.failed && index >= outcome.failed.index) pending.reject(outcome.failed.error);
    else pending.resolve(outcome.rows[index] as unknown[]);
  }
  if (!outcome.failed) {
    held.ended = committing;
    return result;
  }
  // The statements' own errors first (a repository maps its SQLSTATE); then the failure itself
  // (the BEGIN's, or the COMMIT's: a deferred check).
  await result;
  throw outcome.failed.error;
}

/**
 * Calls `then` once what `data` wrote is committed: at its transaction's commit (never, when it
 * rolls back), or at once outside a transaction, where each statement commits on its own. A
 * savepoint rolled back does not cancel it: `then` must be harmless when nothing was written,
 * and must not throw (the commit is done).
 */
export function afterCommit(data: DataAccess, then: () => void): void {
  const held = heldOf(data);
  if (!held) then();
  else if (held.committed) held.committed.push(then);
  else held.committed = [then];
}

/** Whether the handle runs in a transaction (a batch must not join one caller's). */
export const inTransaction = (data: DataAccess): boolean => heldOf(data) !== undefined;

export interface TransactionOptions {
  isolationLevel?: IsolationLevel;
  readOnly?: boolean;
}

/**
 * Runs `work` in a transaction, giving it the transaction's handle: committed when `work`
 * resolves, rolled back when it throws; inside the caller's transaction, under a savepoint rolled
 * back alone. It holds one pooled connection and sends BEGIN, the work's statements and COMMIT on
 * it: MikroORM's and knex's transactions cost about 400 µs more CPU, more than a purchase's SQL.
 * BEGIN goes in one round trip with the first statement (a round trip costs more CPU than BEGIN
 * itself), and work that ran no statement sends neither BEGIN nor COMMIT.
 *
 * A transaction Postgres rolls back for a concurrent one (a deadlock's victim, a serialization
 * failure) runs again from the start, a few times at most (RUNS_ON_CONFLICT), so `work` may run
 * more than once: what it does outside the database (a rate limit's point, a value it leaves in
 * a variable of its caller) is done again, as when its client retries. A nested transaction is
 * run again with the outermost one, whose locks the conflict concerned.
 */
export async function transaction<T>(
  data: DataAccess,
  work: (tx: DataAccess) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const outer = heldOf(data);
  if (outer) return underSavepoint(outer, () => work(data));
  const { pool } = data as unknown as Handle;
  refuseInsideTransaction(pool);
  for (let run = 1; ; run++) {
    try {
      return await runTransaction(pool, work, options);
    } catch (error) {
      if (run === RUNS_ON_CONFLICT || !lostToConcurrentTransaction(error)) throw error;
    }
  }
}

async function runTransaction<T>(
  pool: StatementPool,
  work: (tx: DataAccess) => Promise<T>,
  { isolationLevel, readOnly }: TransactionOptions,
): Promise<T> {
  const mode = `${isolationLevel ? ` isolation level ${isolationLevel}` : ''}${readOnly ? ' read only' : ''}`;
  const held: Held = {
    pool,
    connection: await pool.acquire(),
    released: false,
    savepoints: 0,
    begin: `begin${mode}`,
    begun: false,
    ended: false,
  };
  // Nothing to end when no statement began the transaction, or when inOneRoundTrip committed it.
  const end = (sql: string) => (held.begun && !held.ended ? pool.run(held.connection, sql, []) : undefined);
  try {
    let result: T;
    try {
      const tx = asData({ pool, held });
      result = await (pool.single ? transactionScope.run(held, () => work(tx)) : work(tx));
    } catch (error) {
      await Promise.resolve(end('rollback')).catch(() => undefined);
      throw error;
    }
    await end('commit');
    if (held.committed) for (const then of held.committed) then();
    return result;
  } finally {
    held.released = true;
    await pool.release(held.connection);
  }
}

async function underSavepoint<T>(held: Held, work: () => Promise<T>): Promise<T> {
  const name = `atrium_savepoint_${held.savepoints + 1}`;
  const send = (sql: string) => runHeld(held, sql, []);
  await send(`savepoint ${name}`);
  held.savepoints++;
  try {
    const result = await work();
    await send(`release savepoint ${name}`);
    return result;
  } catch (error) {
    await send(`rollback to savepoint ${name}`).catch(() => undefined);
    throw error;
  } finally {
    held.savepoints--;
  }
}
