import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from '@mikro-orm/postgresql';

declare const opaque: unique symbol;

/** A pooled connection held for a transaction's statements (db.ts `holdConnection`). */
export interface HeldConnection {
  run(sql: string, params: readonly unknown[]): Promise<unknown[]>;
  release(): Promise<void>;
  /** Set once released: the connection may serve someone else by then. */
  readonly released: boolean;
}

/**
 * The lean transaction the current async call chain runs in. A statement given the call's own
 * handle inside a transaction's work joins the transaction, as MikroORM's transactional made the
 * root entity manager do, instead of waiting for a second pooled connection.
 */
export const leanTransactionScope = new AsyncLocalStorage<HeldConnection>();

/**
 * What a service holds to reach the database: an opaque handle it passes to repository functions
 * and other modules' APIs, and to `transaction` (src/platform/data-access.ts). Only repositories
 * (and the platform's few SQL files) open it, with `executeBound` for lean statements or
 * `entityManagerOf` from this file for the ORM, so the rules never depend on how a statement
 * runs. Inside a module only `*.repository.ts` files may import this file (npm run lint).
 */
export interface DataAccess {
  readonly [opaque]: never;
}

/**
 * The handle behind DataAccess. A call's handle is the root entity manager for the lean path and
 * a fork of it from the first use of the ORM, for the rest of the call: a fork builds a unit of
 * work, an entity loader and their maps, about 4% of the CPU of a request that only runs lean
 * statements (GET /api/users/me), and garbage for every such request. A transaction's handle is
 * the transaction's own entity manager, already a fork.
 */
export class DataHandle implements DataAccess {
  declare readonly [opaque]: never;
  private fork: EntityManager | undefined;

  constructor(
    private readonly base: EntityManager,
    private readonly forkOnUse: boolean,
    /** A lean transaction's connection, which every statement of the handle runs on. */
    readonly held?: HeldConnection,
  ) {}

  /**
   * What executeBound reads (the driver, the pool, the transaction it is in). The root entity
   * manager answers these as a fork would: outside a transaction it has none, and inside one
   * MikroORM finds it for the root too.
   */
  get lean(): EntityManager {
    return this.fork ?? this.base;
  }

  get orm(): EntityManager {
    if (heldConnectionOf(this)) {
      throw new Error(
        'The ORM was used in a lean transaction: open the transaction with { unitOfWork: true } (src/platform/data-access.ts).',
      );
    }
    if (!this.forkOnUse) return this.base;
    this.fork ??= this.base.fork();
    return this.fork;
  }
}

/** The entity manager behind a handle, for repositories' ORM work: forks a call's root on first use. */
export function entityManagerOf(data: DataAccess): EntityManager {
  return (data as DataHandle).orm;
}

/** The entity manager executeBound runs on: never forks. */
export function leanEntityManagerOf(on: DataAccess | EntityManager): EntityManager {
  return on instanceof DataHandle ? on.lean : (on as EntityManager);
}

/**
 * The connection of the lean transaction a statement given `on` runs in: the handle's own, or
 * the transaction this async call chain is in when `on` is a call's handle or an entity manager
 * (no ORM transaction can be open inside a lean one). Undefined outside lean transactions.
 */
export function heldConnectionOf(on: DataAccess | EntityManager): HeldConnection | undefined {
  const own = on instanceof DataHandle ? on.held : undefined;
  if (own) return own;
  const scoped = leanTransactionScope.getStore();
  return scoped && !scoped.released ? scoped : undefined;
}
