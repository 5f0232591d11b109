import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { inboxLockSql, type NotificationsApi } from '../../src/modules/notifications/index.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** The SQL fragments the notifications module exports for other modules' statements. */
describe("the notifications module's SQL fragments", () => {
  const app = useTestApp();
  const notifications = () => (app().modules as unknown as { notifications: NotificationsApi }).notifications;
  const note = (userId: string) => ({ userId, code: 'test.lock', subject: 'Locked' });

  it('inboxLockSql holds a lock until the transaction ends, after which a store still writes', async () => {
    const { user } = await registerUser(app());
    await transaction(app().db.data, async (tx) => {
      await executeBound(tx, `select ${inboxLockSql('$1::uuid')}`, [user.id]);
      const [held] = await executeBound<{ n: number }>(
        tx,
        "select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid() and granted",
        [],
      );
      expect(held?.n).toBeGreaterThanOrEqual(1);
      // Stored in the same transaction, told the lock is held: one statement, no wait on itself.
      expect(await notifications().store(tx, [note(user.id)], new Date(), true)).toHaveLength(1);
    });
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'inboxLockSql is the lock a store takes: a store for that user waits until the holder commits',
    async () => {
      const { user } = await registerUser(app());
      const holder = new pg.Client({ connectionString: app().testDb.url });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query(`select ${inboxLockSql('$1::uuid')}`, [user.id]);
        let stored = false;
        const storing = transaction(app().db.data, (tx) =>
          notifications().store(tx, [note(user.id)], new Date()),
        ).then(() => {
          stored = true;
        });
        await vi.waitFor(
          async () => {
            const [row] = await queryRows<{ n: number }>(
              app().db,
              "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event = 'advisory'",
            );
            expect(row?.n).toBe(1);
          },
          { timeout: 30_000, interval: 50 },
        );
        expect(stored).toBe(false);
        await holder.query('commit');
        await storing;
        expect(stored).toBe(true);
      } finally {
        await holder.end();
      }
    },
  );
});
