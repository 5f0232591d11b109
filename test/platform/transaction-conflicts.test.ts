import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DataAccess, transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * A transaction Postgres rolls back for a concurrent one (src/platform/data-access.ts): the
 * victim of a deadlock (40P01) or a serialization failure (40001) runs again, three runs at
 * most. The conflicts are raised by the database itself: `tx_conflict(fails, state)` fails with
 * that SQLSTATE until a sequence, which no rollback resets, passes `fails`.
 */
describe('transactions that lose to concurrent ones', () => {
  let testDb: TestDatabase;
  const data = (): DataAccess => testDb.db.data;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    await executeBound(data(), 'create table conflict_probe (id int primary key)', []);
    await executeBound(data(), 'create sequence conflict_probe_calls', []);
    await executeBound(
      data(),
      `create function tx_conflict(fails integer, state text) returns integer language plpgsql as $$
       declare call integer := nextval('conflict_probe_calls');
       begin
         if call <= fails then
           raise exception 'lost to a concurrent transaction' using errcode = state;
         end if;
         return call;
       end $$`,
      [],
    );
  });
  afterAll(async () => {
    await testDb?.drop();
  });
  beforeEach(async () => {
    await executeBound(data(), 'delete from conflict_probe', []);
    await executeBound(data(), 'alter sequence conflict_probe_calls restart', []);
  });

  const insert = (on: DataAccess, id: number) =>
    executeBound(on, 'insert into conflict_probe (id) values ($1)', [id]);
  const ids = async () =>
    (await executeBound<{ id: number }>(data(), 'select id from conflict_probe order by id', [])).map(
      (row) => row.id,
    );
  /** Calls tx_conflict on `on`: it fails the first `fails` calls with `state`, then answers its call's number. */
  const conflict = async (on: DataAccess, fails: number, state = 'deadlock_detected') =>
    (await executeBound<{ call: number }>(on, 'select tx_conflict($1, $2) as call', [fails, state]))[0]?.call;
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a rejection');
      },
      (error: unknown) => error as Error & { code?: string },
    );

  it.each([
    ['a deadlock', 'deadlock_detected'],
    ['a serialization failure', 'serialization_failure'],
  ])('runs the work again after %s, and answers what the run that committed answered', async (_, state) => {
    let runs = 0;
    const answer = await transaction(data(), async (tx) => {
      runs++;
      await insert(tx, 1);
      return conflict(tx, 1, state);
    });
    expect({ runs, answer }).toEqual({ runs: 2, answer: 2 });
    expect(await ids()).toEqual([1]);
  });

  it('gives up after the third run, passing the conflict on, and writes nothing', async () => {
    let runs = 0;
    const error = await failure(
      transaction(data(), async (tx) => {
        runs++;
        await insert(tx, 1);
        await conflict(tx, 5);
      }),
    );
    expect({ runs, code: error.code }).toEqual({ runs: 3, code: '40P01' });
    expect(await ids()).toEqual([]);
  });

  it('runs a nested transaction that loses again only as part of the outermost one', async () => {
    const runs = { outer: 0, inner: 0 };
    await transaction(data(), async (tx) => {
      runs.outer++;
      await insert(tx, 1);
      await transaction(tx, async (inner) => {
        runs.inner++;
        await insert(inner, 2);
        await conflict(inner, 1);
      });
    });
    expect(runs).toEqual({ outer: 2, inner: 2 });
    expect(await ids()).toEqual([1, 2]);
  });

  it('never runs again a work that failed for another reason', async () => {
    await insert(data(), 1);
    let runs = 0;
    const error = await failure(
      transaction(data(), async (tx) => {
        runs++;
        await insert(tx, 1);
      }),
    );
    expect({ runs, code: error.code }).toEqual({ runs: 1, code: '23505' });
  });

  it('runs a statement outside a transaction again when it loses, three runs at most', async () => {
    expect(await conflict(data(), 2)).toBe(3);
    await executeBound(data(), 'alter sequence conflict_probe_calls restart', []);
    expect((await failure(conflict(data(), 3))).code).toBe('40P01');
    const [calls] = await executeBound<{ last: string }>(
      data(),
      'select last_value::text as last from conflict_probe_calls',
      [],
    );
    expect(calls?.last).toBe('3');
  });

  // The embedded database runs one session: nothing there waits for a lock.
  it.skipIf(!process.env.DATABASE_URL)(
    'commits both of two transactions that deadlock: the one Postgres cancels runs again after the other',
    async () => {
      const runs = { a: 0, b: 0 };
      let firstLocks = 0;
      let bothHoldOne: () => void = () => undefined;
      const crossed = new Promise<void>((resolve) => {
        bothHoldOne = resolve;
      });
      // Each takes one named lock, and once both hold theirs, the other's.
      const crossing = (name: 'a' | 'b', first: number, second: number) =>
        transaction(data(), async (tx) => {
          runs[name]++;
          await executeBound(tx, 'select pg_advisory_xact_lock($1::bigint)', [first]);
          if (++firstLocks === 2) bothHoldOne();
          await crossed;
          await executeBound(tx, 'select pg_advisory_xact_lock($1::bigint)', [second]);
          await insert(tx, first);
          return name;
        });
      expect(await Promise.all([crossing('a', 1, 2), crossing('b', 2, 1)])).toEqual(['a', 'b']);
      expect(runs.a + runs.b).toBe(3);
      expect(await ids()).toEqual([1, 2]);
    },
  );
});
