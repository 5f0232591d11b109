import { Migration } from '@mikro-orm/migrations';

/**
 * Dedicated game servers (docs/gameservers.md): one row per spawn, with its state and its
 * per-spawn token. The token is stored only as its SHA-256 (a 256-bit random secret needs no slow
 * hash) and cleared when the server stops or fails, which is what revokes it. The status type
 * game_server_status is 0001's (every enumeration type is created there, once). A server belongs to
 * its world: deleting the world deletes its rows (the service stops the processes first).
 */
export class Migration0008GameServers extends Migration {
  override up(): void {
    this.addSql(`
      create table game_servers (
        id uuid primary key,
        world_id uuid not null references worlds (id) on delete cascade,
        requested_by uuid references users (id) on delete set null,
        backend text not null check (backend in ('local', 'agones')),
        status game_server_status not null default 'starting',
        address text check (address is null or length(address) <= 255),
        error text,
        token_hash bytea unique check (token_hash is null or length(token_hash) = 32),
        players integer not null default 0 check (players >= 0),
        max_players integer not null check (max_players > 0),
        created_at timestamptz not null,
        ready_at timestamptz,
        ended_at timestamptz,
        ready_deadline timestamptz not null,
        check ((status in ('starting', 'ready')) = (token_hash is not null)),
        check (status <> 'ready' or (address is not null and ready_at is not null)),
        check ((status in ('failed', 'stopped')) = (ended_at is not null))
      )`);
    // Joins look for the live servers of one world; ended rows stay for the record.
    this.addSql(
      `create index game_servers_live_by_world on game_servers (world_id, created_at) where status in ('starting', 'ready')`,
    );
  }
}
