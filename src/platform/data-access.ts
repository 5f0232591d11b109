import type { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  type DataAccess,
  DataHandle,
  entityManagerOf,
  type HeldConnection,
  heldConnectionOf,
  leanEntityManagerOf,
  leanTransactionScope,
} from './data-handle.js';
import { holdConnection } from './db.js';

/** Isolation levels for `transaction`, so a service need not import the ORM for them. */
export { IsolationLevel } from '@mikro-orm/core';
export type { DataAccess } from './data-handle.js';

/** A handle on `em` that forks it at the first ORM use: a call's, a job's or a command's. */
export function dataAccess(em: EntityManager): DataAccess {
  return new DataHandle(em, true);
}

/** Whether the handle runs in a transaction (a batch must not join one caller's). */
export function inTransaction(data: DataAccess): boolean {
  return heldConnectionOf(data) !== undefined || Boolean(leanEntityManagerOf(data).getTransactionContext());
}

export interface TransactionOptions {
  isolationLevel?: IsolationLevel;
  readOnly?: boolean;
  /**
   * The work uses repositories that go through the ORM (entities, a unit of work flushed at
   * commit): the transaction runs as MikroORM's. Without it, the transaction is lean and using
   * the ORM in it throws.
   */
  unitOfWork?: boolean;
}

/**
 * Runs `work` in a transaction, giving it the transaction's handle: committed when `work`
 * resolves, rolled back when it throws. Inside the caller's transaction it runs under a savepoint
 * (rolled back alone when it throws). A lean transaction holds one pooled connection and sends
 * BEGIN, the work's statements and COMMIT on it: MikroORM's and knex's transaction machinery
 * cost about 400 µs of CPU per transaction on top of its round trips, more than a purchase's
 * statements cost the service. `unitOfWork` runs MikroORM's `transactional` instead (flushed and
 * committed when `work` resolves).
 */
export async function transaction<T>(
  data: DataAccess,
  work: (tx: DataAccess) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const { unitOfWork, ...ormOptions } = options;
  const held = heldConnectionOf(data);
  if (held) {
    if (unitOfWork) throw new Error('A unit-of-work transaction cannot run inside a lean one.');
    return underSavepoint(held, () => work(data));
  }
  const em = leanEntityManagerOf(data);
  if (unitOfWork || em.getTransactionContext()) {
    return entityManagerOf(data).transactional((tx) => work(new DataHandle(tx, false)), ormOptions);
  }
  const connection = await holdConnection(em);
  try {
    await connection.run(beginStatement(options), []);
    let result: T;
    try {
      result = await leanTransactionScope.run(connection, () => work(new DataHandle(em, false, connection)));
    } catch (error) {
      await connection.run('rollback', []).catch(() => undefined);
      throw error;
    }
    await connection.run('commit', []);
    return result;
  } finally {
    await connection.release();
  }
}

function beginStatement({ isolationLevel, readOnly }: TransactionOptions): string {
  return `begin${isolationLevel ? ` isolation level ${isolationLevel}` : ''}${readOnly ? ' read only' : ''}`;
}

/** How deep each held connection's savepoints go: a savepoint is named by its depth. */
const savepointDepth = new WeakMap<HeldConnection, number>();

async function underSavepoint<T>(held: HeldConnection, work: () => Promise<T>): Promise<T> {
  const depth = (savepointDepth.get(held) ?? 0) + 1;
  const name = `atrium_savepoint_${depth}`;
  await held.run(`savepoint ${name}`, []);
  savepointDepth.set(held, depth);
  try {
    const result = await work();
    await held.run(`release savepoint ${name}`, []);
    return result;
  } catch (error) {
    await held.run(`rollback to savepoint ${name}`, []).catch(() => undefined);
    throw error;
  } finally {
    savepointDepth.set(held, depth - 1);
  }
}
