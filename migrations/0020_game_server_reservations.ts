import { Migration } from '@mikro-orm/migrations';

/**
 * Join reservations and idle game servers (docs/gameservers.md, "Reservations").
 *
 * A user holds at most one reservation (the table's key is the user): a join of another server
 * moves it, a join of the same world again extends it. A server's occupancy is the player count
 * it last reported (`players`, at `players_reported_at`) plus the live reservations made after
 * that report, so a player is counted once and the count corrects itself with the next report.
 * Reservations go with their user and with their server's row.
 *
 * `busy_at` is the last moment a ready server was known to be in use (ready, reported players, or
 * had a reservation moved away): with no players and no live reservation for
 * GAMESERVER_IDLE_STOP_SECONDS after it, the server is stopped.
 */
export class Migration0020GameServerReservations extends Migration {
  override up(): void {
    this.addSql(`
      alter table game_servers
        add column players_reported_at timestamptz,
        add column busy_at timestamptz`);
    this.addSql("update game_servers set busy_at = ready_at where status = 'ready'");
    this.addSql(`
      alter table game_servers
        add constraint game_servers_ready_is_busy check (status <> 'ready' or busy_at is not null)`);
    this.addSql(`
      create table game_server_reservations (
        user_id uuid primary key references users (id) on delete cascade,
        server_id uuid not null references game_servers (id) on delete cascade,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        check (expires_at > created_at)
      )`);
    // Occupancy and the idle sweep count a server's live reservations.
    this.addSql(
      'create index game_server_reservations_by_server on game_server_reservations (server_id, expires_at)',
    );
    // The idle sweep looks only at ready servers that report no players.
    this.addSql(
      `create index game_servers_idle on game_servers (busy_at) where status = 'ready' and players = 0`,
    );
    // Spawn admission counts the live servers a user caused.
    this.addSql(
      `create index game_servers_live_by_requester on game_servers (requested_by) where status in ('starting', 'ready')`,
    );
  }
}
