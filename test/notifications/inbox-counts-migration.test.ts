import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import { storeNotifications } from '../../src/modules/notifications/notifications.repository.js';
import { transaction } from '../../src/platform/data-access.js';
import { withMigrator } from '../../src/platform/migrate.js';
import { createEmptyDatabase, insertUser, queryRows } from '../helpers/database.js';

/** Migration 0039 on a database that already holds notifications: the counts a store trims by. */
describe('migration 0041 on a database that already holds notifications', () => {
  it('counts each user’s notifications, so the next store keeps the cap exactly', async () => {
    const empty = await createEmptyDatabase();
    try {
      const { db } = empty;
      const index = migrationsList.findIndex((m) => m.name === '0041_notification_inboxes');
      await withMigrator(db, (migrator) => migrator.up({ to: migrationsList[index - 1]?.name as string }));
      const [full, some, none] = [await insertUser(db), await insertUser(db), await insertUser(db)];
      const insert = (userId: string, count: number, read: number) =>
        queryRows(
          db,
          `insert into notifications (id, user_id, code, subject, content, created_at, read_at)
           select gen_random_uuid(), ?, 'old.note', 'Old ' || n, '{}', timestamptz '2026-01-01' + n * interval '1 minute',
             case when n = ? then timestamptz '2026-02-01' end
           from generate_series(1, ?) n`,
          [userId, read, count],
        );
      await insert(full, 4, 2);
      await insert(some, 2, 0);

      await withMigrator(db, (migrator) => migrator.up());

      const counts = await queryRows<{ user_id: string; stored: number }>(
        db,
        'select user_id, stored from notification_inboxes',
      );
      expect(new Map(counts.map((row) => [row.user_id, row.stored]))).toEqual(
        new Map([
          [full, 4],
          [some, 2],
        ]),
      );
      // A cap of 4: one more for `full` removes its one read notification (Old 2), not its oldest.
      const note = (userId: string) => ({
        id: randomUUID(),
        userId,
        code: 'new.note',
        subject: 'New',
        contentJson: '{}',
        senderId: null,
        createdAt: new Date('2026-03-01T00:00:00.000Z'),
      });
      await transaction(db.data, (tx) => storeNotifications(tx, [note(full), note(some), note(none)], 4));
      const kept = await queryRows<{ user_id: string; subject: string }>(
        db,
        'select user_id, subject from notifications order by user_id, created_at',
      );
      expect(kept.filter((row) => row.user_id === full).map((row) => row.subject)).toEqual([
        'Old 1',
        'Old 3',
        'Old 4',
        'New',
      ]);
      expect(kept.filter((row) => row.user_id === some)).toHaveLength(3);
      expect(kept.filter((row) => row.user_id === none)).toHaveLength(1);
    } finally {
      await empty.drop();
    }
  });
});
