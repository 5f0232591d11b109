import { Migration } from '@mikro-orm/migrations';

/**
 * Presence lives in the KV store with a TTL; the account keeps only what must outlive it: when
 * the user was last seen, and the short status message (trimmed, at most 140 characters).
 */
export class Migration0006PresenceColumns extends Migration {
  override up(): void {
    this.addSql('alter table users add column last_seen_at timestamptz');
    this.addSql(
      'alter table users add column status_message text constraint users_status_message_length check (char_length(status_message) <= 140)',
    );
  }
}
