import { Migration } from '@mikro-orm/migrations';

/**
 * World content: worlds, their rooms, chunks addressed by room and (x, y, z), and the append-only
 * revisions of each chunk; plus the favorite worlds of a profile, which point at worlds.
 *
 * - Revision ids come from one sequence, drawn while the world's row is locked (every write locks
 *   it first), so within a world they increase in commit order. `worlds.content_revision` is
 *   therefore the largest revision id of the world, kept in the row by the writing transaction and
 *   read in O(1).
 * - `chunks` holds each chunk's head: its current revision and whether that is a tombstone. A
 *   write compares and moves the head; the payload stays in the revision row.
 * - Revisions are append-only: a trigger refuses UPDATE and DELETE, except the changes the
 *   schema's own foreign keys make (pg_trigger_depth() > 1 inside a cascade): rows going with
 *   their world, and the author becoming null when the author's account is deleted.
 * - A user's worlds go with the account (content is the owner's), and favorites go with either
 *   side.
 */
export class Migration0005WorldContent extends Migration {
  override up(): void {
    this.addSql(`
      create table worlds (
        id uuid primary key,
        owner_id uuid not null references users (id) on delete cascade,
        name text not null constraint worlds_name_length check (char_length(name) between 1 and 100),
        description text not null default '' constraint worlds_description_length check (char_length(description) <= 2000),
        visibility world_visibility not null default 'private',
        content_revision bigint not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    this.addSql('create index worlds_owner_id_idx on worlds (owner_id, id)');

    this.addSql(`
      create table rooms (
        id uuid primary key,
        world_id uuid not null references worlds (id) on delete cascade,
        name text not null constraint rooms_name_length check (char_length(name) between 1 and 64),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    // Names are unique per world, case-insensitively, so "main" always means one room.
    this.addSql('create unique index rooms_world_name_key on rooms (world_id, lower(name))');
    this.addSql('create index rooms_world_id_idx on rooms (world_id, id)');

    this.addSql('create sequence chunk_revision_ids as bigint');
    this.addSql(`
      create table chunks (
        id bigint generated always as identity primary key,
        room_id uuid not null references rooms (id) on delete cascade,
        world_id uuid not null references worlds (id) on delete cascade,
        x integer not null,
        y integer not null,
        z integer not null,
        revision bigint not null,
        deleted boolean not null default false,
        constraint chunks_position_key unique (room_id, x, y, z)
      )`);
    this.addSql('create index chunks_world_id_idx on chunks (world_id)');

    this.addSql(`
      create table chunk_revisions (
        id bigint primary key,
        chunk_id bigint not null references chunks (id) on delete cascade,
        world_id uuid not null references worlds (id) on delete cascade,
        room_id uuid not null references rooms (id) on delete cascade,
        x integer not null,
        y integer not null,
        z integer not null,
        payload bytea,
        tombstone boolean not null,
        author_id uuid references users (id) on delete set null,
        created_at timestamptz not null default now(),
        constraint chunk_revisions_payload_presence check (tombstone = (payload is null)),
        constraint chunk_revisions_payload_size check (octet_length(payload) <= 1048576)
      )`);
    // History pages (newest first, keyset on id) and "the chunk as of revision N" for rollback.
    this.addSql('create index chunk_revisions_world_id_idx on chunk_revisions (world_id, id desc)');
    this.addSql('create index chunk_revisions_chunk_id_idx on chunk_revisions (chunk_id, id desc)');
    this.addSql('create index chunk_revisions_author_id_idx on chunk_revisions (author_id)');

    this.addSql(`
      create function chunk_revisions_append_only() returns trigger language plpgsql as $$
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
        raise exception 'chunk revisions are append-only' using errcode = 'restrict_violation';
      end
      $$`);
    this.addSql(`
      create trigger chunk_revisions_append_only
      before update or delete on chunk_revisions
      for each row execute function chunk_revisions_append_only()`);

    this.addSql(`
      create table profile_favorites (
        user_id uuid not null references users (id) on delete cascade,
        world_id uuid not null references worlds (id) on delete cascade,
        created_at timestamptz not null default now(),
        primary key (user_id, world_id)
      )`);
    this.addSql('create index profile_favorites_world_id_idx on profile_favorites (world_id)');
  }
}
