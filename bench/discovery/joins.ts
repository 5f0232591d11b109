import { pgbenchUuid } from '../chat/ceiling.js';
import { restContender } from '../realtime/rest-load.js';
import type { Atrium } from '../realtime/servers.js';
import { JOINER_SEQUENCE } from './seed.js';

/**
 * Measurement 2: joins of one hot world (`POST /api/worlds/{id}/join`), REST_CONNECTIONS
 * connections, each request a seeded user who never joined, so every join reserves a place on the
 * world's one ready server and records a visit; beside pgbench running the transaction
 * GameServersService.join runs then (src/modules/gameservers/gameservers.service.ts: the world's
 * join lock, failOverdue, extendReservation, startingServer, reserveRoomiest from
 * gameservers.repository.ts and reservations.repository.ts, and discovery's recordVisit, copied),
 * and the same transaction without recordVisit's statement: what recording visits costs a join.
 * pgbench's joiners come from a sequence, read before the transaction (one statement more than
 * the service runs); its `now` is the transaction's, as the service binds one time per join.
 */

export function joinRequests(atrium: Atrium, worldId: string, tokens: readonly string[]) {
  let next = 0;
  return restContender(
    'POST join',
    `http://127.0.0.1:${atrium.httpPort}/api/worlds/${worldId}/join`,
    atrium.pid,
    {},
    {
      method: 'POST',
      setup: (request) => ({
        ...request,
        headers: { ...request.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` },
      }),
    },
  );
}

const SERVER_COLUMNS = `id, world_id, requested_by, backend, status::text as status, address, error, players,
  max_players, created_at, ready_at, ended_at, ready_deadline`;

/** `lock`: the world's join lock key (`game_servers:<world id>`); `w`: the world; `s`: its server (visits). */
export function joinScript(prefix: string, withVisit: boolean): string {
  const me = pgbenchUuid(prefix, 'n');
  // Visit ids ascend with the joiner's number, as the service's time-ordered ids do.
  const visitId = me.replace("-0000-7000-8000-'", "-0003-7000-8000-'");
  const visit = `with visit as (
  insert into world_visits (id, world_id, user_id, server_id, visited_at) values (${visitId}, :w::uuid, ${me}, :s::uuid, now()))
insert into world_visitors (world_id, user_id, first_visited_at) values (:w::uuid, ${me}, now())
on conflict do nothing;
`;
  return `select nextval('${JOINER_SEQUENCE}') as n \\gset
begin;
select pg_advisory_xact_lock(hashtextextended(:lock, 0));
update game_servers set status = 'failed', ended_at = now(), token_hash = null, error = 'missed'
  where status = 'starting' and ready_deadline <= now() and (:w::uuid is null or world_id = :w::uuid)
  returning ${SERVER_COLUMNS};
update game_server_reservations r set expires_at = greatest(r.expires_at, now() + interval '60 seconds')
  from game_servers s
  where r.user_id = ${me} and r.expires_at > now() and s.id = r.server_id and s.world_id = :w::uuid and s.status = 'ready'
  returning s.id, s.address;
select ${SERVER_COLUMNS} from game_servers where world_id = :w::uuid and status = 'starting' order by created_at limit 1;
with target as (
  select s.id, s.address from game_servers s
  cross join lateral (
    select count(*)::integer as n from game_server_reservations r
    where r.server_id = s.id and r.expires_at > now()
      and (s.players_reported_at is null or r.created_at > s.players_reported_at)) fresh
  where s.world_id = :w::uuid and s.status = 'ready' and s.players + fresh.n < s.max_players
  order by s.players + fresh.n desc, s.created_at
  limit 1),
previous as (
  select server_id from game_server_reservations
  where user_id = ${me} and expires_at > now() and exists (select 1 from target)
  for update),
left_server as (
  update game_servers set busy_at = greatest(busy_at, now())
  where id = (select server_id from previous) and status = 'ready'),
held as (
  insert into game_server_reservations (user_id, server_id, created_at, expires_at)
  select ${me}, id, now(), now() + interval '60 seconds' from target
  on conflict (user_id) do update
    set server_id = excluded.server_id, created_at = excluded.created_at, expires_at = excluded.expires_at)
select id, address from target;
${withVisit ? visit : ''}commit`;
}

/** pgbench's variables for a world and its server. */
export const joinVariables = ({ world, server }: { world: string; server: string }) => ({
  lock: `game_servers:${world}`,
  w: world,
  s: server,
});
