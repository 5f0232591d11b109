import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes of the administration lists (docs/worlds.md and docs/gameservers.md, "Administration").
 *
 * - Worlds are listed newest first (by id: UUID v7) whatever their visibility, filtered by
 *   visibility, by owner (0005's `(owner_id, id)` serves that one) or by a name search that
 *   matches as the groups' search does: a prefix of the lower-cased name or words of it.
 * - Game servers are listed newest first, filtered by status or by world; ended rows stay for the
 *   record, so these lists grow with every spawn and need their order served by an index.
 */
export class Migration0025AdminIndexes extends Migration {
  override up(): void {
    this.addSql('create index worlds_visibility_id_idx on worlds (visibility, id)');
    this.addSql('create index worlds_name_prefix_idx on worlds ((lower(name) collate "C"))');
    this.addSql(`create index worlds_name_words_idx on worlds using gin (to_tsvector('simple', name))`);
    this.addSql('create index game_servers_created_idx on game_servers (created_at, id)');
    this.addSql('create index game_servers_status_created_idx on game_servers (status, created_at, id)');
    this.addSql('create index game_servers_world_created_idx on game_servers (world_id, created_at, id)');
  }
}
