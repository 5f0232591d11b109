import { describe, expect, it } from 'vitest';
import { createTestDatabase, insertUser, queryRows } from '../helpers/database.js';

const count = async (db: Parameters<typeof queryRows>[0], table: string) =>
  Number((await queryRows<{ n: string }>(db, `select count(*)::text as n from ${table}`))[0]?.n);

/** test/helpers/embedded-reuse.ts: a worker's next file gets the dropped database back as the template left it. */
describe.skipIf(process.env.DATABASE_URL)('a test database reused by the next file of a worker', () => {
  it('comes back with every table as in the template: rows a file wrote gone, the template rows and sequences back', async () => {
    const first = await createTestDatabase();
    const platformAccounts = await count(first.db, 'economy_accounts');
    expect(platformAccounts).toBeGreaterThan(0);
    const [{ next: firstRevision } = { next: '' }] = await queryRows<{ next: string }>(
      first.db,
      `select nextval('chunk_revision_ids')::text as next`,
    );
    await insertUser(first.db);
    await queryRows(first.db, 'delete from economy_accounts where user_id is null');
    await first.drop();

    const second = await createTestDatabase();
    try {
      expect(second.db).toBe(first.db);
      expect(await count(second.db, 'users')).toBe(0);
      expect(await count(second.db, 'economy_accounts')).toBe(platformAccounts);
      const [{ next } = { next: '' }] = await queryRows<{ next: string }>(
        second.db,
        `select nextval('chunk_revision_ids')::text as next`,
      );
      expect(next).toBe(firstRevision);
    } finally {
      await second.drop();
    }
  });

  it('is not reused once a test changed its schema', async () => {
    const first = await createTestDatabase();
    await queryRows(first.db, 'alter table users add column reuse_probe int');
    await first.drop();
    const second = await createTestDatabase();
    try {
      expect(second.db).not.toBe(first.db);
      expect(
        await queryRows(
          second.db,
          `select 1 from information_schema.columns where column_name = 'reuse_probe'`,
        ),
      ).toEqual([]);
    } finally {
      await second.drop();
    }
  });
});
