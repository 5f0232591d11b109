import { Migration } from '@mikro-orm/migrations';

/**
 * Groups, their rosters and join requests (docs/groups.md).
 *
 * - A group's name is unique regardless of case. Its owner is also a member with role `owner`
 *   (at most one per group); when the owner's account goes, `owner_id` becomes null and the rest
 *   of the roster stays until an admin claims the group.
 * - `member_count` is kept by a trigger on the roster, so it stays right however rows go (a
 *   user's deletion cascades into every roster they were on). A join takes the group row's lock
 *   and checks the count under it, so concurrent joins never pass the cap.
 * - Indexes: the roster in role order then join time (`group_role` sorts owner, admin, member),
 *   a user's groups newest first, requests oldest first, names by prefix (lower case, C order so
 *   a LIKE prefix is an index range) and by words (a `simple` text-search GIN index).
 */
export class Migration0012Groups extends Migration {
  override up(): void {
    this.addSql(`
      create table groups (
        id uuid primary key,
        name text not null constraint groups_name_length check (char_length(name) between 3 and 64),
        description text not null default ''
          constraint groups_description_length check (char_length(description) <= 1000),
        join_policy text not null default 'open' constraint groups_join_policy check (join_policy in ('open', 'closed')),
        owner_id uuid references users (id) on delete set null,
        member_count integer not null default 0 constraint groups_member_count check (member_count >= 0),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    this.addSql('create unique index groups_name_key on groups ((lower(name) collate "C"))');
    this.addSql(`create index groups_name_words_idx on groups using gin (to_tsvector('simple', name))`);
    this.addSql('create index groups_owner_idx on groups (owner_id) where owner_id is not null');
    this.addSql(`
      create table group_members (
        group_id uuid not null references groups (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        role group_role not null default 'member',
        joined_at timestamptz not null default now(),
        primary key (group_id, user_id)
      )`);
    this.addSql(
      'create index group_members_roster_idx on group_members (group_id, role, joined_at, user_id)',
    );
    this.addSql(
      'create index group_members_user_idx on group_members (user_id, joined_at desc, group_id desc)',
    );
    this.addSql(
      `create unique index group_members_one_owner on group_members (group_id) where role = 'owner'`,
    );
    this.addSql(`
      create function group_members_count() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update groups set member_count = member_count + 1 where id = new.group_id;
        else
          update groups set member_count = member_count - 1 where id = old.group_id;
        end if;
        return null;
      end $$`);
    this.addSql(`
      create trigger group_members_count after insert or delete on group_members
      for each row execute function group_members_count()`);
    this.addSql(`
      create table group_join_requests (
        group_id uuid not null references groups (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        primary key (group_id, user_id)
      )`);
    this.addSql(
      'create index group_join_requests_queue_idx on group_join_requests (group_id, created_at, user_id)',
    );
    this.addSql('create index group_join_requests_user_idx on group_join_requests (user_id)');
  }
}
