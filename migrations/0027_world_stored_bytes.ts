import { Migration } from '@mikro-orm/migrations';

/**
 * A world's byte quota counts the history it keeps as well as its live chunks (docs/worlds.md,
 * "Stored content bytes"): `worlds.content_bytes` (0019), the live payloads alone, becomes
 * `stored_bytes`, the payload sizes of every revision the world keeps, its chunks' heads and their
 * kept history alike (tombstones counting 0). The statements that append or delete revisions keep
 * it under the world's row lock, as before: commits, rollbacks, room deletions and the pruning
 * pass. Existing worlds get it computed here; a world whose
 * history takes it over its quota refuses writes that add bytes until retention prunes it.
 */
export class Migration0027WorldStoredBytes extends Migration {
  override up(): void {
    this.addSql('alter table worlds rename column content_bytes to stored_bytes');
    this.addSql(
      'alter table worlds rename constraint worlds_content_bytes_nonnegative to worlds_stored_bytes_nonnegative',
    );
    this.addSql(`
      update worlds w set stored_bytes = coalesce(
        (select sum(octet_length(payload)) from chunk_revisions where world_id = w.id), 0)`);
  }
}
