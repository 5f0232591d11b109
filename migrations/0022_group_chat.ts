import { Migration } from '@mikro-orm/migrations';

/**
 * Group chat: a message's target may be a group (deleted with it), read newest first per group
 * as world chat is. The one-target rule of 0002 now counts the group as a third kind of target.
 */
export class Migration0022GroupChat extends Migration {
  override up(): void {
    this.addSql('alter table messages add column group_id uuid references groups (id) on delete cascade');
    this.addSql(`
      alter table messages drop constraint messages_one_target, add constraint messages_one_target check (
        (conversation_id is not null and world_id is null and room_id is null and group_id is null)
        or (conversation_id is null and world_id is not null and group_id is null)
        or (conversation_id is null and world_id is null and room_id is null and group_id is not null)
      )`);
    this.addSql(`
      create index messages_group_history_idx on messages (group_id, created_at desc, id desc)
      where group_id is not null`);
  }
}
