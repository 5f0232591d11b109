import { Migration } from '@mikro-orm/migrations';

/**
 * Whether a block stands between the conversation's two users, kept by the block and unblock
 * writes in their own transactions. A direct message then needs no transaction of its own: its
 * one statement updates the conversation row `where not blocked`, so it either commits before a
 * block (whose update of that row waits for it) or waits for the block and, re-reading the row,
 * writes nothing.
 */
export class Migration0017ConversationBlocked extends Migration {
  override up(): void {
    this.addSql('alter table conversations add column blocked boolean not null default false');
    this.addSql(`
      update conversations c set blocked = true
      where exists (
        select 1 from blocks b
        where (b.blocker_id = c.user_a_id and b.blocked_id = c.user_b_id)
           or (b.blocker_id = c.user_b_id and b.blocked_id = c.user_a_id))`);
  }
}
