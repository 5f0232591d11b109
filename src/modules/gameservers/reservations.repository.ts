import type { GameServerStatus, ServerAccess } from '../../../protocol/gameservers.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';

/**
 * Join reservations (migration 0020, docs/gameservers.md "Reservations"): one row per user, the
 * server their latest join handed them, ready or still starting. A reservation counts toward its server's occupancy while it
 * is live (`expires_at`) and newer than the server's last player report; older ones are in that
 * report already, or their player never came. Joins call these under their world's lock.
 */

/** The server a reservation holds a place on: ready (with its address) or starting. */
export interface ReservedSlot {
  id: string;
  status: 'starting' | 'ready';
  address: string | null;
}

export interface ReservationRequest {
  userId: string;
  worldId: string;
  now: Date;
  expiresAt: Date;
  /** Which of the world's servers the join may use (JoinScope). */
  scope: JoinScope;
}

/**
 * The servers of the world a join may use (docs/gameservers.md, "Instance access"): those of one
 * access, those of one access one owner started, or one server. Null means any.
 */
export interface JoinScope {
  access: ServerAccess | null;
  ownerId: string | null;
  serverId: string | null;
}

/**
 * The scope's condition on the server `s`, from parameters `$n`, `$n+1`, `$n+2` (access, owner,
 * server): a fixed text, so each statement is prepared once whatever the scope.
 */
const inScope = (n: number) =>
  `($${n}::text is null or s.access = $${n}) and ($${n + 1}::uuid is null or s.requested_by = $${n + 1})
   and ($${n + 2}::uuid is null or s.id = $${n + 2})`;
const scopeParams = (scope: JoinScope) => [scope.access, scope.ownerId, scope.serverId];

/**
 * The caller's live reservation on a live (starting or ready) server of the world in the scope,
 * extended to `expiresAt`: a join of the same world again takes no second place. Its creation
 * time stays, so a report that counted the player keeps it from counting twice.
 */
export async function extendReservation(
  data: DataAccess,
  request: ReservationRequest,
): Promise<ReservedSlot | undefined> {
  const [row] = await executeBound<ReservedSlot>(
    data,
    `update game_server_reservations r set expires_at = greatest(r.expires_at, $4)
     from game_servers s
     where r.user_id = $1 and r.expires_at > $3 and s.id = r.server_id and s.world_id = $2
       and s.status in ('starting', 'ready') and ${inScope(5)}
     returning s.id, s.status::text as status, s.address`,
    [request.userId, request.worldId, request.now, request.expiresAt, ...scopeParams(request.scope)],
  );
  return row;
}

/** A server's live reservations made since its last player report: they count toward its occupancy. */
const freshCount = (server: string, now: string) => `(select count(*)::integer from game_server_reservations r
  where r.server_id = ${server}.id and r.expires_at > ${now}
    and (${server}.players_reported_at is null or r.created_at > ${server}.players_reported_at))`;

/**
 * Reserves a place on a live server of the world in the scope that has room (its occupancy below
 * max_players), moving the caller's reservation there: the fullest first, ready ones before
 * starting ones when `readyFirst` (a public join's rule: a starting server only when no ready one
 * has room), a ready one on a tie otherwise. A place on a starting server counts at once. The
 * server it leaves was in use until now: its idle clock starts now. Undefined, and nothing
 * written, when every server in the scope is full.
 */
export async function reserveRoomiest(
  data: DataAccess,
  request: ReservationRequest,
  readyFirst: boolean,
): Promise<ReservedSlot | undefined> {
  const [row] = await executeBound<ReservedSlot>(
    data,
    `with target as (
       select s.id, s.status::text as status, s.address from game_servers s
       cross join lateral (select ${freshCount('s', '$3')} as n) fresh
       where s.world_id = $2 and s.status in ('starting', 'ready') and s.players + fresh.n < s.max_players
         and ${inScope(5)}
       order by ($8::boolean and s.status = 'ready') desc, s.players + fresh.n desc, s.status = 'ready' desc, s.created_at
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
     select id, status, address from target`,
    [
      request.userId,
      request.worldId,
      request.now,
      request.expiresAt,
      ...scopeParams(request.scope),
      readyFirst,
    ],
  );
  return row;
}

/**
 * The server of the user's latest reservation (made by a join, live or not): where a friend
 * joining them goes while it is starting or ready. Undefined when they never joined, or the server
 * ended (its row is kept, and says so).
 */
export async function serverOfLatestReservation(
  data: DataAccess,
  userId: string,
): Promise<{ id: string; world_id: string; status: GameServerStatus; ready_deadline: Date } | undefined> {
  const [row] = await executeBound<{
    id: string;
    world_id: string;
    status: GameServerStatus;
    ready_deadline: Date;
  }>(
    data,
    `select s.id, s.world_id, s.status::text as status, s.ready_deadline
     from game_server_reservations r join game_servers s on s.id = r.server_id where r.user_id = $1`,
    [userId],
  );
  return row;
}

/** The live reservations of a live server made since its last player report. */
export async function freshReservations(data: DataAccess, serverId: string, now: Date): Promise<number> {
  const [row] = await executeBound<{ count: number }>(
    data,
    `select count(*)::integer as count from game_server_reservations r
     join game_servers s on s.id = r.server_id
     where r.server_id = $1 and s.status in ('starting', 'ready') and r.expires_at > $2
       and (s.players_reported_at is null or r.created_at > s.players_reported_at)`,
    [serverId, now],
  );
  return row?.count ?? 0;
}

/** Where a party placement put the party: the server, and the members who took a new place on it. */
export interface PartySlot extends ReservedSlot {
  /** The placed members who held no live place on it before (a visit each). */
  newcomers: string[];
}

/**
 * Locks the reservations these users hold, in a fixed order, until the transaction ends: a party
 * placement reads who holds a place where, and no join elsewhere may move one of them meanwhile.
 */
export async function lockReservations(data: DataAccess, userIds: readonly string[]): Promise<void> {
  await executeBound(
    data,
    `select user_id from game_server_reservations where user_id = any($1::uuid[]) order by user_id for update`,
    [toUuidArray(userIds)],
  );
}

/**
 * Locks the reservations on the world's servers, in lockReservations' order, until the
 * transaction ends: the world's deletion takes them before it deletes the servers, as a party
 * placed in another world locks its members' reservations before the servers they leave.
 */
export async function lockReservationsOnWorld(data: DataAccess, worldId: string): Promise<void> {
  await executeBound(
    data,
    `select r.user_id from game_server_reservations r join game_servers s on s.id = r.server_id
     where s.world_id = $1 order by r.user_id for update of r`,
    [worldId],
  );
}

/**
 * Places every one of `userIds` on one live server of the world in the scope (docs/gameservers.md,
 * "Joining together"), in one statement: the fullest whose occupancy plus the users holding no
 * live place on it stays within max_players (a ready one on a tie). Each user's reservation moves
 * there; one already there is kept (its creation time stays, as extendReservation keeps it) and
 * extended. The servers they leave were in use until now: their idle clock starts now. Undefined,
 * and nothing written, when no server in the scope has room for all of them. The caller holds the
 * world's join lock and the users' reservations (lockReservations).
 */
export async function reserveForParty(
  data: DataAccess,
  request: Omit<ReservationRequest, 'userId'> & { userIds: readonly string[] },
): Promise<PartySlot | undefined> {
  const [row] = await executeBound<PartySlot>(
    data,
    `with members as (select distinct unnest($1::uuid[]) as user_id),
     target as (
       select s.id, s.status::text as status, s.address from game_servers s
       cross join lateral (select ${freshCount('s', '$3')} as n) fresh
       cross join lateral (
         select count(*)::integer as n from members m
         where not exists (select 1 from game_server_reservations r
                           where r.user_id = m.user_id and r.server_id = s.id and r.expires_at > $3)) needed
       where s.world_id = $2 and s.status in ('starting', 'ready')
         and s.players + fresh.n + needed.n <= s.max_players and ${inScope(5)}
       order by s.players + fresh.n desc, s.status = 'ready' desc, s.created_at
       limit 1),
     previous as (
       select r.user_id, r.server_id from game_server_reservations r
       where r.user_id in (select user_id from members) and r.expires_at > $3),
     left_servers as (
       update game_servers set busy_at = greatest(busy_at, $3)
       where id in (select server_id from previous) and id <> (select id from target) and status = 'ready'),
     held as (
       insert into game_server_reservations as r (user_id, server_id, created_at, expires_at)
       select m.user_id, t.id, $3, $4 from members m cross join target t
       on conflict (user_id) do update set
         server_id = excluded.server_id,
         created_at = case when r.server_id = excluded.server_id and r.expires_at > $3
                           then r.created_at else excluded.created_at end,
         expires_at = case when r.server_id = excluded.server_id and r.expires_at > $3
                           then greatest(r.expires_at, excluded.expires_at) else excluded.expires_at end)
     select t.id, t.status, t.address,
       array(select m.user_id::text from members m
             where not exists (select 1 from previous p where p.user_id = m.user_id and p.server_id = t.id)
             order by m.user_id) as newcomers
     from target t`,
    [
      toUuidArray(request.userIds),
      request.worldId,
      request.now,
      request.expiresAt,
      ...scopeParams(request.scope),
    ],
  );
  return row;
}
