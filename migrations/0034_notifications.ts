import { Migration } from '@mikro-orm/migrations';

/**
 * The notification inbox (src/modules/notifications, docs/notifications.md).
 *
 * - One row per notification; `sender_id` is set null when its account is deleted (the content
 *   stays), the recipient's deletion takes its notifications with it.
 * - Lists page newest first on (created_at, id) and count the unread, per user: one index each.
 * - A broadcast to everyone is a job row: the accounts created by its `created_at` are notified in
 *   id order, `last_user_id` moving in the transaction that writes each batch's notifications, so a
 *   restart resumes after the last committed batch and nobody is notified twice.
 */
export class Migration0034Notifications extends Migration {
  override up(): void {
    this.addSql(`
      create table notifications (
        id uuid primary key,
        user_id uuid not null references users (id) on delete cascade,
        code text not null,
        subject text not null,
        content jsonb not null,
        sender_id uuid references users (id) on delete set null,
        created_at timestamptz not null,
        read_at timestamptz
      )`);
    this.addSql('create index notifications_user_idx on notifications (user_id, created_at desc, id desc)');
    this.addSql('create index notifications_unread_idx on notifications (user_id) where read_at is null');
    this.addSql(
      'create index notifications_sender_idx on notifications (sender_id) where sender_id is not null',
    );
    this.addSql(`
      create table notification_broadcasts (
        id uuid primary key,
        code text not null,
        subject text not null,
        content jsonb not null,
        created_at timestamptz not null,
        last_user_id uuid,
        finished_at timestamptz
      )`);
    this.addSql(
      'create index notification_broadcasts_pending_idx on notification_broadcasts (created_at) where finished_at is null',
    );
  }
}
