import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  afterCommit,
  type DataAccess,
  IsolationLevel,
  inTransaction,
  transaction,
} from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { failureOf } from '../helpers/rejections.js';

/**
 * `transaction` (src/platform/data-access.ts) on real databases, the one kind there is: BEGIN,
 * the work's statements and COMMIT on one held connection (BEGIN in one round trip with the first
 * statement), savepoints for nested ones.
 */
describe('transactions', () => {
  let testDb: TestDatabase;
  const data = (): DataAccess => testDb.db.data;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    await executeBound(data(), 'create table if not exists tx_probe (id int primary key, note text)', []);
  });
  afterAll(async () => {
    await testDb?.drop();
  });
  beforeEach(async () => {
    await executeBound(data(), 'delete from tx_probe', []);
  });

  const insert = (on: DataAccess, id: number, note = 'x') =>
    executeBound(on, 'insert into tx_probe (id, note) values ($1, $2)', [id, note]);
  const ids = async (on: DataAccess = data()) =>
    (await executeBound<{ id: number }>(on, 'select id from tx_probe order by id', [])).map((r) => r.id);
  const failure = failureOf;

  it('commits every statement of the work when it resolves, and answers what the work answered', async () => {
    const answer = await transaction(data(), async (tx) => {
      expect(inTransaction(tx)).toBe(true);
      await insert(tx, 1);
      await insert(tx, 2);
      return 'done';
    });
    expect(answer).toBe('done');
    expect(await ids()).toEqual([1, 2]);
  });

  it('rolls back every statement when the work throws, and the next transaction runs on a clean connection', async () => {
    const error = await failure(
      transaction(data(), async (tx) => {
        await insert(tx, 1);
        throw new Error('refused');
      }),
    );
    expect(error.message).toBe('refused');
    expect(await ids()).toEqual([]);
    await transaction(data(), (tx) => insert(tx, 3));
    expect(await ids()).toEqual([3]);
  });

  it('rolls back when a statement fails, passing on its SQLSTATE', async () => {
    await insert(data(), 1);
    const error = await failure(
      transaction(data(), async (tx) => {
        await insert(tx, 2);
        await insert(tx, 1);
      }),
    );
    expect(error.code).toBe('23505');
    expect(await ids()).toEqual([1]);
  });

  it('rolls back when the first statement, sent with the BEGIN, fails, and answers a work that ran none', async () => {
    await insert(data(), 1);
    const error = await failure(transaction(data(), (tx) => insert(tx, 1)));
    expect(error.code).toBe('23505');
    expect(await transaction(data(), async () => 'nothing ran')).toBe('nothing ran');
    await transaction(data(), (tx) => insert(tx, 2));
    expect(await ids()).toEqual([1, 2]);
  });

  it('rolls back only a nested transaction that throws when the caller catches it', async () => {
    await transaction(data(), async (tx) => {
      await insert(tx, 1);
      await failure(
        transaction(tx, async (inner) => {
          await insert(inner, 2);
          await insert(inner, 1); // unique violation: the inner work fails, the outer goes on
        }),
      );
      await transaction(tx, (inner) => insert(inner, 3));
    });
    expect(await ids()).toEqual([1, 3]);
  });

  it('undoes a nested transaction that committed when the outer one rolls back', async () => {
    const error = await failure(
      transaction(data(), async (tx) => {
        await transaction(tx, (inner) => insert(inner, 1));
        expect(await ids(tx)).toEqual([1]);
        throw new Error('refused');
      }),
    );
    expect(error.message).toBe('refused');
    expect(await ids()).toEqual([]);
  });

  it("tells the call's own handle, which is not the transaction's, from the transaction's inside the work", async () => {
    const call = data();
    await transaction(call, async (tx) => {
      expect(inTransaction(tx)).toBe(true);
      expect(inTransaction(call)).toBe(false);
    });
  });

  it('runs a statement chained in the work but issued after the commit outside the ended transaction', async () => {
    const call = data();
    let open: () => void = () => undefined;
    let chained: Promise<unknown> | undefined;
    await transaction(call, async (tx) => {
      await insert(tx, 1);
      // The continuation keeps the work's async context, which names the transaction's connection.
      chained = new Promise<void>((resolve) => {
        open = resolve;
      }).then(() => {
        expect(inTransaction(call)).toBe(false);
        return insert(call, 2);
      });
    });
    open();
    await chained;
    expect(await ids()).toEqual([1, 2]);
    await transaction(call, (tx) => insert(tx, 3));
    expect(await ids()).toEqual([1, 2, 3]);
  });

  it('runs what afterCommit was given once the transaction committed, never when it rolled back, and at once outside one', async () => {
    const ran: string[] = [];
    await transaction(data(), async (tx) => {
      await insert(tx, 1);
      afterCommit(tx, () => ran.push('committed'));
      // Not before the commit: another connection does not see the row yet.
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(['committed']);
    await failure(
      transaction(data(), async (tx) => {
        afterCommit(tx, () => ran.push('rolled back'));
        throw new Error('refused');
      }),
    );
    afterCommit(data(), () => ran.push('no transaction'));
    expect(ran).toEqual(['committed', 'no transaction']);
  });

  it('begins with the isolation level and read-only mode asked for', async () => {
    const setting = await transaction(
      data(),
      async (tx) =>
        (
          await executeBound<{ level: string; ro: string }>(
            tx,
            "select current_setting('transaction_isolation') as level, current_setting('transaction_read_only') as ro",
            [],
          )
        )[0],
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
    expect(setting).toEqual({ level: 'repeatable read', ro: 'on' });
    const error = await failure(transaction(data(), (tx) => insert(tx, 1), { readOnly: true }));
    expect(error.code).toBe('25006');
    expect(await ids()).toEqual([]);
  });
});
