import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DataAccess, inOneRoundTrip, transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { runPipeline } from '../../src/platform/statement-pipeline.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { failureOf } from '../helpers/rejections.js';

/**
 * Statements sent together (`inOneRoundTrip`, src/platform/data-access.ts): on Postgres in one
 * round trip (statement-pipeline.ts), on the embedded database one after another; either way they
 * answer, fail and commit as they would one at a time.
 */
describe('statements in one round trip', () => {
  let testDb: TestDatabase;
  const data = (): DataAccess => testDb.db.data;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    await executeBound(data(), 'create table if not exists trip_parent (id int primary key)', []);
    await executeBound(
      data(),
      `create table if not exists trip_child (
         id int primary key,
         parent int references trip_parent (id) deferrable initially deferred)`,
      [],
    );
  });
  afterAll(async () => {
    await testDb?.drop();
  });
  beforeEach(async () => {
    await executeBound(data(), 'delete from trip_child', []);
    await executeBound(data(), 'delete from trip_parent', []);
  });

  const insert = (on: DataAccess, id: number) =>
    executeBound<{ id: number }>(on, 'insert into trip_parent (id) values ($1) returning id', [id]);
  const ids = async () =>
    (await executeBound<{ id: number }>(data(), 'select id from trip_parent order by id', [])).map(
      (r) => r.id,
    );
  const failure = failureOf;

  it('answers each statement its own rows, in the order they were issued, and commits with them when asked', async () => {
    const answers = await transaction(data(), async (tx) => {
      await insert(tx, 1);
      return inOneRoundTrip(
        tx,
        () =>
          Promise.all([
            insert(tx, 2),
            insert(tx, 3),
            executeBound<{ n: number }>(tx, 'select count(*)::int as n from trip_parent', []),
          ]),
        { commit: true },
      );
    });
    expect(answers).toEqual([[{ id: 2 }], [{ id: 3 }], [{ n: 3 }]]);
    expect(await ids()).toEqual([1, 2, 3]);
  });

  it('begins the transaction with them when they are its first statements', async () => {
    await failure(
      transaction(data(), async (tx) => {
        await inOneRoundTrip(tx, () => Promise.all([insert(tx, 1), insert(tx, 2)]));
        throw new Error('refused');
      }),
    );
    expect(await ids()).toEqual([]);
  });

  it('rejects the failing statement and those after it with its error, and the transaction rolls back', async () => {
    await insert(data(), 1);
    let settled: PromiseSettledResult<unknown>[] = [];
    const error = await failure(
      transaction(data(), (tx) =>
        inOneRoundTrip(
          tx,
          async () => {
            settled = await Promise.allSettled([insert(tx, 2), insert(tx, 1), insert(tx, 3)]);
            const rejected = settled.find((outcome) => outcome.status === 'rejected');
            if (rejected) throw rejected.reason;
          },
          { commit: true },
        ),
      ),
    );
    expect(error.code).toBe('23505');
    expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect((settled[2] as PromiseRejectedResult).reason).toBe(error);
    expect(await ids()).toEqual([1]);
  });

  it('fails with the commit the database refuses (a deferred check), keeping nothing', async () => {
    const error = await failure(
      transaction(data(), (tx) =>
        inOneRoundTrip(
          tx,
          () =>
            Promise.all([
              insert(tx, 1),
              executeBound(tx, 'insert into trip_child (id, parent) values (1, 99)', []),
            ]),
          { commit: true },
        ),
      ),
    );
    expect(error.code).toBe('23503');
    expect(await ids()).toEqual([]);
    await transaction(data(), (tx) => insert(tx, 2));
    expect(await ids()).toEqual([2]);
  });

  it('refuses a statement issued after the round trip committed the transaction', async () => {
    const error = await failure(
      transaction(data(), async (tx) => {
        await inOneRoundTrip(tx, () => insert(tx, 1), { commit: true });
        await insert(tx, 2);
      }),
    );
    expect(error.message).toBe('A statement was issued after its transaction committed.');
    expect(await ids()).toEqual([1]);
  });

  it('leaves the commit to the outer transaction inside a nested one', async () => {
    await failure(
      transaction(data(), async (tx) => {
        await transaction(tx, (inner) => inOneRoundTrip(inner, () => insert(inner, 1), { commit: true }));
        await insert(tx, 2);
        throw new Error('refused');
      }),
    );
    expect(await ids()).toEqual([]);
  });

  it('runs the statements as usual outside a transaction', async () => {
    expect(await inOneRoundTrip(data(), () => Promise.all([insert(data(), 1), insert(data(), 2)]))).toEqual([
      [{ id: 1 }],
      [{ id: 2 }],
    ]);
    expect(await ids()).toEqual([1, 2]);
  });
});

describe.runIf(process.env.DATABASE_URL)('a pipeline on a node-pg connection', () => {
  let client: pg.Client;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: process.env.DATABASE_URL, query_timeout: 100 });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  it('records the statements it prepared after its read timeout, so their next use does not prepare them again', async () => {
    const sleep = (seconds: number) => ({
      text: 'select pg_sleep($1::float) is null as slept',
      name: 'pipeline_timeout_probe',
      values: [seconds],
    });
    const timedOut = await runPipeline(client, [sleep(0.3)], pg.types);
    expect(timedOut.failed?.error).toMatchObject({ message: 'Query read timeout' });
    // A query queued behind it answers once the server ended it (its ReadyForQuery).
    // node-pg reads a query's own query_timeout, which its types do not declare.
    await client.query({ text: 'select 1', query_timeout: 10_000 } as pg.QueryConfig);
    const again = await runPipeline(client, [sleep(0)], pg.types);
    expect(again.failed?.error).toBeUndefined();
    expect(again.rows).toEqual([[{ slept: false }]]);
  });
});
