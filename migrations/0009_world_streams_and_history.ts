import { Migration } from '@mikro-orm/migrations';

/**
 * What live streams and revision history read.
 *
 * `worlds.stream_seq` counts a world's content commits (chunk writes, batches, rollbacks, room
 * deletions); each committing transaction bumps it under the world's row lock. Streams deliver
 * commits in this order on every node and notice a missed one as a gap. Revision ids cannot
 * serve: deleting a room removes revisions, so the content revision can go down.
 *
 * `(room_id, id desc)` on revisions pages a room's history newest first as one range scan:
 * without it a page of a quiet room walks the world's index past every newer revision of the
 * other rooms. Room ids are unique across worlds, so the room alone is the key. It also serves
 * the room foreign key: deleting a room deletes its revisions through it instead of scanning.
 */
export class Migration0009WorldStreamsAndHistory extends Migration {
  override up(): void {
    this.addSql('alter table worlds add column stream_seq bigint not null default 0');
    this.addSql('create index chunk_revisions_room_id_idx on chunk_revisions (room_id, id desc)');
  }
}
