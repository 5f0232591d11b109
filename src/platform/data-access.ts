import type { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type DataAccess, DataHandle, entityManagerOf, leanEntityManagerOf } from './data-handle.js';

/** Isolation levels for `transaction`, so a service need not import the ORM for them. */
export { IsolationLevel } from '@mikro-orm/core';
export type { DataAccess } from './data-handle.js';

/** A handle on `em` that forks it at the first ORM use: a call's, a job's or a command's. */
export function dataAccess(em: EntityManager): DataAccess {
  return new DataHandle(em, true);
}

/** Whether the handle runs in a transaction (a batch must not join one caller's). */
export function inTransaction(data: DataAccess): boolean {
  return Boolean(leanEntityManagerOf(data).getTransactionContext());
}

export interface TransactionOptions {
  isolationLevel?: IsolationLevel;
  readOnly?: boolean;
}

/**
 * Runs `work` in a transaction of the handle's entity manager (MikroORM's `transactional`: nested
 * in the caller's transaction when there is one, flushed and committed when `work` resolves,
 * rolled back when it throws), giving it the transaction's handle.
 */
export function transaction<T>(
  data: DataAccess,
  work: (tx: DataAccess) => Promise<T>,
  options?: TransactionOptions,
): Promise<T> {
  return entityManagerOf(data).transactional((em) => work(new DataHandle(em, false)), options);
}
