import { Migration } from '@mikro-orm/migrations';

/**
 * How far each participant has read a conversation: set when they list its history, and the
 * bound of their unread count (peer messages created after it). Null means nothing read yet.
 *
 * It also links world and room messages to their world and room (deleted with them). 0002 cannot:
 * on a new database it runs before 0005 creates the world tables, and 0011 runs after both on
 * every database.
 */
export class Migration0011ConversationLastRead extends Migration {
  override up(): void {
    this.addSql('alter table conversation_participants add column last_read_at timestamptz');
    this.addSql(`
      alter table messages
        add constraint messages_world_id_fkey foreign key (world_id) references worlds (id) on delete cascade,
        add constraint messages_room_id_fkey foreign key (room_id) references rooms (id) on delete cascade`);
  }
}
