import { Migration } from '@mikro-orm/migrations';

/**
 * World chat history reads the world's own messages (room_id null) newest first. On 0002's world
 * index those pages step over every room message of the world, so a world with busy rooms read
 * many rows per page; this partial index holds the world's own messages only. 0002's index stays:
 * deleting a world finds all its messages (rooms' included) through it.
 */
export class Migration0016WorldChatHistory extends Migration {
  override up(): void {
    this.addSql(`
      create index messages_world_chat_history_idx on messages (world_id, created_at desc, id desc)
      where world_id is not null and room_id is null`);
  }
}
