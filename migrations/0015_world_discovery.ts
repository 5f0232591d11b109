import { Migration } from '@mikro-orm/migrations';

/**
 * World visits and the discovery metadata kept from them. A visit is recorded when a user joins a
 * world (is handed a game server's address); `world_discovery` keeps each world's visit count and
 * latest visit, written in the same statement, for discovery to rank worlds without counting
 * rows. Visits go with their world; a deleted user's visits stay, anonymous.
 */
export class Migration0015WorldDiscovery extends Migration {
  override up(): void {
    this.addSql(`
      create table world_visits (
        id uuid primary key,
        world_id uuid not null references worlds (id) on delete cascade,
        user_id uuid references users (id) on delete set null,
        server_id uuid references game_servers (id) on delete set null,
        visited_at timestamptz not null
      )`);
    this.addSql('create index world_visits_by_world on world_visits (world_id, visited_at desc)');
    this.addSql(
      'create index world_visits_by_user on world_visits (user_id, visited_at desc) where user_id is not null',
    );
    this.addSql(`
      create table world_discovery (
        world_id uuid primary key references worlds (id) on delete cascade,
        visit_count bigint not null default 0 check (visit_count >= 0),
        last_visited_at timestamptz,
        updated_at timestamptz not null
      )`);
  }
}
