import { Migration } from '@mikro-orm/migrations';

/**
 * What bounds a world's content: the live payload bytes it holds, and how much history it keeps.
 *
 * - `worlds.content_bytes` is the sum of the payload sizes of the world's live chunks (their
 *   current revisions, tombstones counting 0). The statements that move chunk heads keep it under
 *   the world's row lock (writes, batches, rollbacks, room deletions), so the quota check is one
 *   read of the locked row. Existing worlds get it computed here.
 * - Revision retention (docs/worlds.md, "Retention"): `history_horizon` is the world's horizon H,
 *   the oldest revision a rollback may target; it only grows. `history_pruned_through` is how far
 *   the pruning pass has deleted what H allows (revisions up to it keep one per chunk at most),
 *   `history_checked_through` how far it has looked at chunks written for the per-chunk cap, and
 *   `history_due_at` when the world next needs a pass (null: never written). Every commit sets it
 *   to its own time at the latest, and the partial index lets each node find due worlds without
 *   scanning all of them.
 * - `chunks (world_id, id)` replaces `(world_id)`: a rollback walks a world's chunks in id order,
 *   a bounded page per statement, and the foreign key's cascade still finds a world's chunks.
 * - The append-only trigger of `chunk_revisions` lets one more DELETE through: the pruning pass's,
 *   which arms a transaction-local setting first, and only for a revision older than its world's
 *   horizon that is not its chunk's head. Every other UPDATE and DELETE is refused as before.
 */
export class Migration0019WorldContentLimits extends Migration {
  override up(): void {
    this.addSql(`
      alter table worlds
        add column content_bytes bigint not null default 0
          constraint worlds_content_bytes_nonnegative check (content_bytes >= 0),
        add column history_horizon bigint not null default 0,
        add column history_pruned_through bigint not null default 0,
        add column history_checked_through bigint not null default 0,
        add column history_due_at timestamptz`);
    this.addSql(`
      update worlds w set
        content_bytes = coalesce((
          select sum(octet_length(r.payload)) from chunks c join chunk_revisions r on r.id = c.revision
          where c.world_id = w.id and not c.deleted), 0),
        history_due_at = case when w.content_revision > 0 then now() end`);
    this.addSql(
      'create index worlds_history_due_at_idx on worlds (history_due_at) where history_due_at is not null',
    );
    this.addSql('create index chunks_world_id_id_idx on chunks (world_id, id)');
    this.addSql('drop index chunks_world_id_idx');

    this.addSql(`
      create or replace function chunk_revisions_append_only() returns trigger language plpgsql as $$
      begin
        if pg_trigger_depth() > 1 then
          -- A foreign key's own action: the rows go with their world, room or chunk, or the
          -- author's account was deleted.
          if tg_op = 'DELETE' then
            return old;
          end if;
          if new.author_id is null and (to_jsonb(new) - 'author_id') = (to_jsonb(old) - 'author_id') then
            return new;
          end if;
        end if;
        -- The pruning pass: only a revision below its world's horizon that its chunk has moved past.
        if tg_op = 'DELETE' and current_setting('atrium.pruning_revisions', true) = 'on'
           and old.id < (select history_horizon from worlds where id = old.world_id)
           and old.id <> (select revision from chunks where id = old.chunk_id) then
          return old;
        end if;
        raise exception 'chunk revisions are append-only' using errcode = 'restrict_violation';
      end
      $$`);
  }
}
