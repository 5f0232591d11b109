import { Migration } from '@mikro-orm/migrations';

/**
 * The time of the newest message of each side of a conversation (`user_a_id`'s, `user_b_id`'s),
 * kept by the statements that store messages in the row update they already make. A history read
 * moves the reader's read mark only when the peer wrote after it: with these, that is one
 * comparison in the conversation's row instead of a scan of every message since the mark (all of
 * them, for a reader who never had a message to read). A deleted message may leave the time of
 * one that is gone: a read then moves the mark once more, which is harmless.
 */
export class Migration0021ConversationSides extends Migration {
  override up(): void {
    this.addSql('alter table conversations add column last_message_a_at timestamptz');
    this.addSql('alter table conversations add column last_message_b_at timestamptz');
    this.addSql(`
      update conversations c set
        last_message_a_at = (select max(created_at) from messages m where m.conversation_id = c.id and m.sender_id = c.user_a_id),
        last_message_b_at = (select max(created_at) from messages m where m.conversation_id = c.id and m.sender_id = c.user_b_id)`);
  }
}
