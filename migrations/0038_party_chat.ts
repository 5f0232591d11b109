import { Migration } from '@mikro-orm/migrations';

/**
 * Party chat (docs/parties.md): a message's target may be a party, and the chat goes with it: an
 * ended party's messages are deleted with its row. Read newest first per party, as group chat is.
 * The one-target rule of 0002 (extended by 0022) now counts the party as a fourth kind of target.
 */
export class Migration0038PartyChat extends Migration {
  override up(): void {
    this.addSql('alter table messages add column party_id uuid references parties (id) on delete cascade');
    this.addSql(`
      alter table messages drop constraint messages_one_target, add constraint messages_one_target check (
        (conversation_id is not null and world_id is null and room_id is null and group_id is null and party_id is null)
        or (conversation_id is null and world_id is not null and group_id is null and party_id is null)
        or (conversation_id is null and world_id is null and room_id is null and group_id is not null and party_id is null)
        or (conversation_id is null and world_id is null and room_id is null and group_id is null and party_id is not null)
      )`);
    this.addSql(`
      create index messages_party_history_idx on messages (party_id, created_at desc, id desc)
      where party_id is not null`);
  }
}
