import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batched, batchedStatement, statementsAtOnce } from '../../src/platform/batcher.js';
import { CallContext } from '../../src/platform/context.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/** A run whose batches the test ends by hand, recording what each batch was given. */
function heldRuns() {
  const batches: {
    inputs: readonly number[];
    finish(outputs?: readonly string[]): void;
    fail(e: Error): void;
  }[] = [];
  const run = (inputs: readonly number[]) =>
    new Promise<readonly string[]>((resolve, reject) => {
      batches.push({
        inputs,
        finish: (outputs) => resolve(outputs ?? inputs.map((input) => `done ${input}`)),
        fail: reject,
      });
    });
  return { batches, run };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

/**
 * One batch at a time: call 0 runs alone and ends, and calls 1-3, made while it ran, are the
 * second batch, not ended yet. Their answers are their results or their errors' messages.
 */
async function secondBatchOfThree() {
  const { batches, run } = heldRuns();
  const call = batched(run, { maxSize: 10, maxInFlight: 1 });
  const first = call(0);
  const answers = [1, 2, 3].map((input) => call(input).catch((error: Error) => error.message));
  batches[0]?.finish();
  await settled();
  return { batches, first, answers };
}

describe('batched calls', () => {
  it('runs each call at once, alone, while fewer batches than the limit are running', async () => {
    const { batches, run } = heldRuns();
    const call = batched(run, { maxSize: 10, maxInFlight: 2 });
    const answers = [call(1), call(2)];
    expect(batches.map((batch) => batch.inputs)).toEqual([[1], [2]]);
    for (const batch of batches) batch.finish();
    expect(await Promise.all(answers)).toEqual(['done 1', 'done 2']);
  });

  it('gives the calls made while the limit is reached to the next batch, in order and at most maxSize at a time', async () => {
    const { batches, run } = heldRuns();
    const sizes: number[] = [];
    const call = batched(run, { maxSize: 3, maxInFlight: 1, observe: (size) => sizes.push(size) });
    const answers = [1, 2, 3, 4, 5, 6].map((input) => call(input));
    expect(batches.map((batch) => batch.inputs)).toEqual([[1]]);

    batches[0]?.finish();
    await settled();
    expect(batches.map((batch) => batch.inputs)).toEqual([[1], [2, 3, 4]]);
    batches[1]?.finish();
    await settled();
    expect(batches.map((batch) => batch.inputs)).toEqual([[1], [2, 3, 4], [5, 6]]);
    batches[2]?.finish();

    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4, 5, 6].map((input) => `done ${input}`));
    expect(sizes).toEqual([1, 3, 2]);
  });

  it('runs a failed batch again one call at a time, so each caller gets its own answer or error', async () => {
    const { batches, first, answers } = await secondBatchOfThree();
    batches[1]?.fail(new Error('the batch failed'));
    await settled();
    expect(batches.slice(2).map((batch) => batch.inputs)).toEqual([[1], [2], [3]]);
    batches[2]?.finish();
    batches[3]?.fail(new Error('2 cannot be stored'));
    batches[4]?.finish();
    expect(await first).toBe('done 0');
    expect(await Promise.all(answers)).toEqual(['done 1', '2 cannot be stored', 'done 3']);
  });

  it('gives a failure of the database itself to every call of the batch at once, without running them again', async () => {
    const { batches, first, answers } = await secondBatchOfThree();
    batches[1]?.fail(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    );
    expect(await Promise.all(answers)).toEqual(Array(3).fill('connect ECONNREFUSED 127.0.0.1:5432'));
    expect(await first).toBe('done 0');
    expect(batches).toHaveLength(2);
  });

  it('fails a batch whose run answers a different number of results, and runs its calls alone', async () => {
    const { batches, first, answers } = await secondBatchOfThree();
    batches[1]?.finish(['only one']);
    await settled();
    expect(batches.slice(2).map((batch) => batch.inputs)).toEqual([[1], [2], [3]]);
    for (const batch of batches.slice(2)) batch.finish();
    expect([await first, ...(await Promise.all(answers))]).toEqual(['done 0', 'done 1', 'done 2', 'done 3']);
  });

  it('starts waiting calls when a batch ends, whether it succeeded or failed', async () => {
    const { batches, run } = heldRuns();
    const call = batched(run, { maxSize: 10, maxInFlight: 1 });
    const lone = call(1).catch((error: Error) => error.message);
    const next = call(2);
    batches[0]?.fail(new Error('no database'));
    expect(await lone).toBe('no database');
    await settled();
    expect(batches.map((batch) => batch.inputs)).toEqual([[1], [2]]);
    batches[1]?.finish();
    expect(await next).toBe('done 2');
  });
});

/** batchedStatement on a real database: where a caller's statement runs. */
describe('statements at once', () => {
  it('runs two statements of a kind at once, never more than half the pool and at least one', () => {
    expect([1, 2, 3, 4, 5, 10, 100].map(statementsAtOnce)).toEqual([1, 1, 1, 2, 2, 2, 2]);
  });
});

describe('batched statements', () => {
  let testDb: TestDatabase;
  const contextOf = (data = testDb.db.data) =>
    new CallContext(data, {
      user: null,
      log: pino({ level: 'silent' }),
      ip: '127.0.0.1',
    });
  const revoke = (sizes: number[]) =>
    batchedStatement(
      (em, sessionIds: readonly string[]) =>
        executeBound<{ session_id: string }>(
          em,
          `insert into session_revocations (session_id, revoked_at)
           select unnest($1::uuid[]), now() returning session_id`,
          [sessionIds],
        ),
      { maxSize: 10, maxInFlight: 1, observe: (size) => sizes.push(size) },
    );
  const stored = (ids: string[]) =>
    queryRows(testDb.db, 'select session_id from session_revocations where session_id in (?)', [ids]);

  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(async () => {
    await testDb?.drop();
  });

  it('runs the calls of callers outside a transaction through the batches', async () => {
    const sizes: number[] = [];
    const write = revoke(sizes);
    const ids = [newId(), newId(), newId()];
    expect(await Promise.all(ids.map((id) => write(contextOf(), id)))).toEqual(
      ids.map((session_id) => ({ session_id })),
    );
    expect(sizes).toEqual([1, 2]);
    expect(await stored(ids)).toHaveLength(3);
  });

  it("runs a caller in a transaction alone, in it: its write goes back with the transaction's rollback", async () => {
    const sizes: number[] = [];
    const write = revoke(sizes);
    const id = newId();
    await expect(
      transaction(testDb.db.data, async (tx) => {
        expect(await write(contextOf(tx), id)).toEqual({ session_id: id });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(sizes).toEqual([]);
    expect(await stored([id])).toEqual([]);
  });
});
