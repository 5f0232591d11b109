import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CallContext } from '../../src/platform/context.js';
import { inTransaction, transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/** The data handle of a call (CallContext.data): the database's root handle, on its pool. */
describe("a call's data handle", () => {
  let testDb: TestDatabase;
  let other: TestDatabase;
  const contextOf = () =>
    new CallContext(testDb.db.data, { user: null, log: pino({ level: 'silent' }), ip: '127.0.0.1' });
  const revocations = (db: TestDatabase, sessionId: string) =>
    queryRows(db.db, 'select session_id from session_revocations where session_id = ?', [sessionId]);
  const insertRevocation = 'insert into session_revocations (session_id, revoked_at) values ($1, now())';

  beforeAll(async () => {
    [testDb, other] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([testDb?.drop(), other?.drop()]);
  });

  it('runs each lean statement on a pooled connection acquired for it and released at once', async () => {
    const ctx = contextOf();
    expect(ctx.data).toBe(testDb.db.data);
    const { pool } = testDb.db;
    const acquired = vi.spyOn(pool, 'acquire');
    const released = vi.spyOn(pool, 'release');
    try {
      expect(await executeBound(ctx.data, 'select 1 as one', [])).toEqual([{ one: 1 }]);
      expect([acquired.mock.calls.length, released.mock.calls.length]).toEqual([1, 1]);
      expect(await executeBound(ctx.data, 'select $1::int + 1 as two', [1])).toEqual([{ two: 2 }]);
      expect([acquired.mock.calls.length, released.mock.calls.length]).toEqual([2, 2]);
      expect(inTransaction(ctx.data)).toBe(false);
    } finally {
      acquired.mockRestore();
      released.mockRestore();
    }
    // Nothing is held between statements: a transaction of another call gets the connection (on
    // the embedded database, the pool's only one).
    await transaction(contextOf().data, (tx) => executeBound(tx, 'select 1', []));
  });

  it("runs a statement given the transaction's handle in the transaction, seeing its rows and rolling back with it", async () => {
    const ctx = contextOf();
    const sessionId = newId();
    const rollback = new Error('roll back');
    await expect(
      transaction(ctx.data, async (tx) => {
        expect(inTransaction(tx)).toBe(true);
        await executeBound(tx, insertRevocation, [sessionId]);
        expect(
          await executeBound(tx, 'select count(*)::int as n from session_revocations where session_id = $1', [
            sessionId,
          ]),
        ).toEqual([{ n: 1 }]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await revocations(testDb, sessionId)).toEqual([]);
  });

  it("runs a statement given another database's handle inside a transaction on that database's own pool", async () => {
    const sessionId = newId();
    await expect(
      transaction(contextOf().data, async () => {
        expect(inTransaction(other.db.data)).toBe(false);
        await executeBound(other.db.data, insertRevocation, [sessionId]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await revocations(other, sessionId)).toEqual([{ session_id: sessionId }]);
    expect(await revocations(testDb, sessionId)).toEqual([]);
  });
});
