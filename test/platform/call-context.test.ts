import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CallContext } from '../../src/platform/context.js';
import { entityManagerOf } from '../../src/platform/data-handle.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/** The data handle of a call (CallContext.data): the root entity manager for lean statements, a fork for the rest. */
describe("a call's data handle", () => {
  let testDb: TestDatabase;
  const root = () => testDb.db.orm.em;
  const contextOf = () =>
    new CallContext(root(), new MemoryKv(), { user: null, log: pino({ level: 'silent' }), ip: '127.0.0.1' });
  const revocation = (sessionId: string) =>
    queryRows(testDb.db, 'select session_id from session_revocations where session_id = ?', [sessionId]);

  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(async () => {
    await testDb?.drop();
  });

  it('runs lean statements without forking the root entity manager', async () => {
    const forks = vi.spyOn(root(), 'fork');
    try {
      const ctx = contextOf();
      expect(await executeBound(ctx.data, 'select 1 as one', [])).toEqual([{ one: 1 }]);
      expect(await executeBound(ctx.data, 'select $1::int + 1 as two', [1])).toEqual([{ two: 2 }]);
      expect(forks).not.toHaveBeenCalled();
    } finally {
      forks.mockRestore();
    }
  });

  it('forks once at the first other use, and lean statements then run in that fork’s transaction', async () => {
    const forks = vi.spyOn(root(), 'fork');
    const sessionId = newId();
    try {
      const ctx = contextOf();
      await entityManagerOf(ctx.data).begin();
      await executeBound(
        ctx.data,
        'insert into session_revocations (session_id, revoked_at) values ($1, now())',
        [sessionId],
      );
      expect(
        await executeBound(
          ctx.data,
          'select count(*)::int as n from session_revocations where session_id = $1',
          [sessionId],
        ),
      ).toEqual([{ n: 1 }]);
      await entityManagerOf(ctx.data).rollback();
      expect(forks).toHaveBeenCalledTimes(1);
    } finally {
      forks.mockRestore();
    }
    expect(await revocation(sessionId)).toEqual([]);
  });

  it('never writes to the root entity manager: what is set on its entity manager lands on the fork', async () => {
    const ctx = contextOf();
    const marked = entityManagerOf(ctx.data) as unknown as Record<string, unknown>;
    marked.callMarker = 'mine';
    expect(marked.callMarker).toBe('mine');
    expect('callMarker' in marked).toBe(true);
    expect(entityManagerOf(ctx.data)).toBe(marked);
    expect((root() as unknown as Record<string, unknown>).callMarker).toBeUndefined();
  });
});
