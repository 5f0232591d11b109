import { Migration } from '@mikro-orm/migrations';

/**
 * World discovery (docs/discovery.md), extending 0015.
 *
 * - `world_discovery` gains the metadata an owner sets (title and description, null while they
 *   follow the world's name and description, tags, category, thumbnail) and copies of what
 *   search needs of the world (owner, name, description, whether it is public, creation time),
 *   kept by the discovery module in the world's own create and update transactions. `search`
 *   is generated from them, so the GIN index covers the title, description and tags a reader
 *   sees. Every world has a row; this migration makes the rows of worlds that exist.
 * - Visits stay append-only at join time: a `world_visits` row and, for a first visit, a
 *   `world_visitors` row (`on conflict do nothing`). Neither touches a row other joins touch, so a
 *   hot world's joins do not queue on its counters. `folded` marks what the fold job (every node,
 *   `for update skip locked`, each row once) has added to the counters and the hourly buckets.
 * - `world_visit_hours` holds visits per world and hour, the source of the popular (168 h) and
 *   trending (24 h against the 24 h before) scores. `discovery_ranks` holds ranked snapshots, one
 *   per minute at most, so a client paging through one sees no duplicates or gaps.
 */
export class Migration0018Discovery extends Migration {
  override up(): void {
    this.addSql(`
      alter table world_discovery
        add column title text constraint world_discovery_title_length check (char_length(title) between 1 and 100),
        add column description text constraint world_discovery_description_length check (char_length(description) <= 2000),
        add column tags text[] not null default '{}' constraint world_discovery_tags_count check (cardinality(tags) <= 10),
        add column category text not null default 'other' constraint world_discovery_category check (category in
          ('social', 'adventure', 'roleplay', 'simulation', 'competitive', 'creative', 'education', 'horror', 'other')),
        add column thumbnail_asset_id text constraint world_discovery_thumbnail_length check (char_length(thumbnail_asset_id) <= 64),
        add column unique_visitors bigint not null default 0 constraint world_discovery_unique_visitors check (unique_visitors >= 0),
        add column owner_id uuid,
        add column world_name text not null default '',
        add column world_description text not null default '',
        add column is_public boolean not null default false,
        add column world_created_at timestamptz not null default now()`);
    this.addSql(`
      insert into world_discovery (world_id, updated_at, owner_id, world_name, world_description, is_public, world_created_at)
      select id, updated_at, owner_id, name, description, visibility = 'public', created_at from worlds
      on conflict (world_id) do update set owner_id = excluded.owner_id, world_name = excluded.world_name,
        world_description = excluded.world_description, is_public = excluded.is_public,
        world_created_at = excluded.world_created_at`);
    // array_to_string is only stable (it formats any array type); for text[] it is immutable, as a
    // generated column needs.
    this.addSql(`
      create function discovery_tags_text(tags text[]) returns text language sql immutable
      as $$ select array_to_string(tags, ' ') $$`);
    this.addSql(`
      alter table world_discovery add column search tsvector generated always as (
        setweight(to_tsvector('simple'::regconfig, coalesce(title, world_name)), 'A')
        || setweight(to_tsvector('simple'::regconfig, discovery_tags_text(tags)), 'B')
        || setweight(to_tsvector('simple'::regconfig, coalesce(description, world_description)), 'C')
      ) stored`);
    this.addSql(
      'create index world_discovery_search_idx on world_discovery using gin (search) where is_public',
    );
    this.addSql('create index world_discovery_tags_idx on world_discovery using gin (tags) where is_public');
    this.addSql(`
      create index world_discovery_new_idx on world_discovery (world_created_at desc, world_id desc) where is_public`);
    this.addSql(`
      create index world_discovery_category_idx on world_discovery (category, world_created_at desc, world_id desc)
      where is_public`);

    // Visits recorded before this migration are counted already (0015 counted them at join time).
    this.addSql('alter table world_visits add column folded boolean not null default false');
    this.addSql('update world_visits set folded = true');
    this.addSql('create index world_visits_unfolded_idx on world_visits (visited_at) where not folded');
    this.addSql(`
      create table world_visitors (
        world_id uuid not null references worlds (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        first_visited_at timestamptz not null,
        folded boolean not null default false,
        primary key (world_id, user_id)
      )`);
    this.addSql(
      'create index world_visitors_unfolded_idx on world_visitors (first_visited_at) where not folded',
    );
    this.addSql(`
      create table world_visit_hours (
        world_id uuid not null references worlds (id) on delete cascade,
        hour timestamptz not null,
        visits bigint not null constraint world_visit_hours_visits check (visits >= 0),
        primary key (world_id, hour)
      )`);
    this.addSql('create index world_visit_hours_hour_idx on world_visit_hours (hour)');
    this.addSql(`
      insert into world_visit_hours (world_id, hour, visits)
      select world_id, date_trunc('hour', visited_at), count(*) from world_visits group by 1, 2`);
    this.addSql(`
      insert into world_visitors (world_id, user_id, first_visited_at, folded)
      select world_id, user_id, min(visited_at), true from world_visits where user_id is not null group by 1, 2`);
    this.addSql(`
      update world_discovery d set unique_visitors = v.n
      from (select world_id, count(*) as n from world_visitors group by 1) v where v.world_id = d.world_id`);
    this.addSql(`
      create table discovery_ranks (
        snapshot_at timestamptz not null,
        world_id uuid not null references worlds (id) on delete cascade,
        popular bigint not null,
        trending bigint not null,
        world_created_at timestamptz not null,
        primary key (snapshot_at, world_id)
      )`);
    this.addSql(`
      create index discovery_ranks_popular_idx on discovery_ranks
        (snapshot_at, popular desc, world_created_at desc, world_id desc)`);
    this.addSql(`
      create index discovery_ranks_trending_idx on discovery_ranks
        (snapshot_at, trending desc, world_created_at desc, world_id desc)`);
  }
}
