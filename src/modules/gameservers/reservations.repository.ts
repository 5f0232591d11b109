import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/**
 * Join reservations (migration 0020, docs/gameservers.md "Reservations"): one row per user, the
 * server their latest join handed them. A reservation counts toward its server's occupancy while it
 * is live (`expires_at`) and newer than the server's last player report; older ones are in that
 * report already, or their player never came. Joins call these under their world's lock.
 */

/** Where a join sends its caller, with the address to connect to. */
export interface ReservedSlot {
  id: string;
  address: string;
}

export interface ReservationRequest {
  userId: string;
  worldId: string;
  now: Date;
  expiresAt: Date;
}

/**
 * The caller's live reservation on a ready server of the world, extended to `expiresAt`: a join
 * of the same world again takes no second place. Its creation time stays, so a report that
 * counted the player keeps it from counting twice.
 */
export async function extendReservation(
  data: DataAccess,
  request: ReservationRequest,
): Promise<ReservedSlot | undefined> {
  const [row] = await executeBound<ReservedSlot>(
    data,
    `update game_server_reservations r set expires_at = greatest(r.expires_at, $4)
     from game_servers s
     where r.user_id = $1 and r.expires_at > $3 and s.id = r.server_id and s.world_id = $2 and s.status = 'ready'
     returning s.id, s.address`,
    [request.userId, request.worldId, request.now, request.expiresAt],
  );
  return row;
}

/**
 * Reserves a place on the fullest ready server of the world that has room (its occupancy below
 * max_players), moving the caller's reservation there. The server it leaves was in use until now:
 * its idle clock starts now. Undefined, and nothing written, when every server is full.
 */
export async function reserveRoomiest(
  data: DataAccess,
  request: ReservationRequest,
): Promise<ReservedSlot | undefined> {
  const [row] = await executeBound<ReservedSlot>(
    data,
    `with target as (
       select s.id, s.address from game_servers s
       cross join lateral (
         select count(*)::integer as n from game_server_reservations r
         where r.server_id = s.id and r.expires_at > $3
           and (s.players_reported_at is null or r.created_at > s.players_reported_at)) fresh
       where s.world_id = $2 and s.status = 'ready' and s.players + fresh.n < s.max_players
       order by s.players + fresh.n desc, s.created_at
       limit 1),
     previous as (
       select server_id from game_server_reservations
       where user_id = $1 and expires_at > $3 and exists (select 1 from target)
       for update),
     left_server as (
       update game_servers set busy_at = greatest(busy_at, $3)
       where id = (select server_id from previous) and status = 'ready'),
     held as (
       insert into game_server_reservations (user_id, server_id, created_at, expires_at)
       select $1, id, $3, $4 from target
       on conflict (user_id) do update
         set server_id = excluded.server_id, created_at = excluded.created_at, expires_at = excluded.expires_at)
     select id, address from target`,
    [request.userId, request.worldId, request.now, request.expiresAt],
  );
  return row;
}

/** The live reservations of a ready server made since its last player report. */
export async function freshReservations(data: DataAccess, serverId: string, now: Date): Promise<number> {
  const [row] = await executeBound<{ count: number }>(
    data,
    `select count(*)::integer as count from game_server_reservations r
     join game_servers s on s.id = r.server_id
     where r.server_id = $1 and s.status = 'ready' and r.expires_at > $2
       and (s.players_reported_at is null or r.created_at > s.players_reported_at)`,
    [serverId, now],
  );
  return row?.count ?? 0;
}
