import { Migration } from '@mikro-orm/migrations';

/**
 * Each user's notification count (src/modules/notifications, docs/notifications.md), so a store
 * finds out from one row whether the inbox goes past NOTIFICATIONS_MAX_PER_USER instead of ranking
 * the whole inbox every time.
 *
 * - `stored` is the count of the user's notifications; it changes only under the user's inbox
 *   lock, with the rows it counts, and goes with the user's account.
 * - The rows past the cap are found through indexes in the order they go: the oldest read ones
 *   (notifications_read_idx), then the oldest unread ones (notifications_unread_idx, which counts
 *   the unread and pages them too).
 */
export class Migration0041NotificationInboxes extends Migration {
  override up(): void {
    this.addSql(`
      create table notification_inboxes (
        user_id uuid primary key references users (id) on delete cascade,
        stored integer not null check (stored >= 0)
      )`);
    this.addSql(`
      insert into notification_inboxes (user_id, stored)
      select user_id, count(*) from notifications group by user_id`);
    this.addSql('drop index notifications_unread_idx');
    this.addSql(
      'create index notifications_unread_idx on notifications (user_id, created_at, id) where read_at is null',
    );
    this.addSql(
      'create index notifications_read_idx on notifications (user_id, created_at, id) where read_at is not null',
    );
  }
}
