import type {
  GameServerStatus,
  GameServerStatusFilter,
  ServerAccess,
} from '../../../protocol/gameservers.js';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, lockNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { worldOwnerSql } from '../worlds/index.js';
import { type TakenFollow, takeFollowsSql } from './party-follows.js';

/**
 * A game server's row (migration 0008). Token hashes travel as hex text (`decode($n, 'hex')`):
 * both databases bind text the same way.
 */
export interface GameServerRow {
  id: string;
  world_id: string;
  /** Whoever started it (a join's caller, a spawn's spawner): the server's owner (migration 0037). */
  requested_by: string | null;
  /** Who may join it (migration 0037). */
  access: ServerAccess;
  backend: 'local' | 'agones';
  status: GameServerStatus;
  address: string | null;
  error: string | null;
  players: number;
  max_players: number;
  created_at: Date;
  ready_at: Date | null;
  ended_at: Date | null;
  ready_deadline: Date;
  /** The node supervising a local server's process (migration 0028); null for Agones servers. */
  node_id: string | null;
}

/** A server as a report left it, with the party follows that report took (applyReport). */
export interface ReportedServer extends GameServerRow {
  follows: TakenFollow[];
}

const COLUMNS = `id, world_id, requested_by, access, backend, status::text as status, address, error, players,
  max_players, created_at, ready_at, ended_at, ready_deadline, node_id`;

type NewServer = Omit<GameServerRow, 'status' | 'address' | 'error' | 'players' | 'ready_at' | 'ended_at'>;

const INSERT_SERVER = namedSql<NewServer & { token_hash: string }>(
  `insert into game_servers (id, world_id, requested_by, access, backend, token_hash, max_players, created_at,
     ready_deadline, node_id)
   values (:id, :world_id, :requested_by, :access, :backend, decode(:token_hash, 'hex'), :max_players, :created_at,
           :ready_deadline, :node_id)
   returning ${COLUMNS}`,
);

export async function insertServer(
  data: DataAccess,
  row: NewServer,
  tokenHash: Buffer,
): Promise<GameServerRow> {
  const [inserted] = await executeNamed<GameServerRow, NewServer & { token_hash: string }>(
    data,
    INSERT_SERVER,
    {
      ...row,
      token_hash: tokenHash.toString('hex'),
    },
  );
  return inserted as GameServerRow;
}

export async function findServer(data: DataAccess, serverId: string): Promise<GameServerRow | undefined> {
  const [row] = await executeBound<GameServerRow>(data, `select ${COLUMNS} from game_servers where id = $1`, [
    serverId,
  ]);
  return row;
}

/** The live server a token belongs to: starting within its deadline, or ready. */
export async function serverOfToken(
  data: DataAccess,
  tokenHash: Buffer,
  now: Date,
): Promise<{ id: string; world_id: string } | undefined> {
  const [row] = await executeBound<{ id: string; world_id: string }>(
    data,
    `select id, world_id from game_servers
     where token_hash = decode($1, 'hex') and (status = 'ready' or (status = 'starting' and ready_deadline > $2))`,
    [tokenHash.toString('hex'), now],
  );
  return row;
}

/**
 * Ends a live server: `failed` or `stopped`, with the reason, and its token cleared (revoked).
 * Returns the row when this call ended it; undefined when it had already ended.
 */
export async function endServer(
  data: DataAccess,
  serverId: string,
  outcome: { status: 'failed' | 'stopped'; error: string | null; at: Date; onlyIfStarting?: boolean },
): Promise<GameServerRow | undefined> {
  const [row] = await executeBound<GameServerRow>(
    data,
    `update game_servers set status = $2::game_server_status, error = $3, ended_at = $4, token_hash = null
     where id = $1 and status in ('starting', ${outcome.onlyIfStarting ? "'starting'" : "'ready'"})
     returning ${COLUMNS}`,
    [serverId, outcome.status, outcome.error, outcome.at],
  );
  return row;
}

/**
 * The nodes other than `self` supervising live servers recorded before `recordedBefore`: the
 * nodes whose liveness the reconcile checks.
 */
export async function supervisingNodes(
  data: DataAccess,
  self: string,
  recordedBefore: Date,
): Promise<string[]> {
  const rows = await executeBound<{ node_id: string }>(
    data,
    `select distinct node_id from game_servers
     where status in ('starting', 'ready') and node_id is not null and node_id <> $1 and created_at <= $2`,
    [self, recordedBefore],
  );
  return rows.map((row) => row.node_id);
}

/**
 * Stops the live servers of these (dead) nodes recorded before `recordedBefore`, their tokens
 * cleared; returns the ones this call stopped. The status guards the update, so of several nodes
 * sweeping at once one stops each server: the others wait for its row and find it ended.
 */
export async function stopServersOfNodes(
  data: DataAccess,
  nodeIds: readonly string[],
  outcome: { error: string; at: Date; recordedBefore: Date },
): Promise<GameServerRow[]> {
  return executeBound<GameServerRow>(
    data,
    `update game_servers set status = 'stopped', error = $2, ended_at = $3, token_hash = null
     where node_id = any($1::uuid[]) and status in ('starting', 'ready') and created_at <= $4
     returning ${COLUMNS}`,
    [nodeIds, outcome.error, outcome.at, outcome.recordedBefore],
  );
}

/**
 * Whether the reconcile has anything to look at: a live (starting or ready) server, by the live
 * servers' index, or a party follow not yet sent. One statement, so a reconcile of a service
 * without live servers (at rest) runs one instead of its five.
 */
export async function anythingLive(data: DataAccess): Promise<boolean> {
  const [row] = await executeBound<{ live: boolean }>(
    data,
    `select exists (select 1 from game_servers where status in ('starting', 'ready'))
       or exists (select 1 from game_server_party_follows) as live`,
    [],
  );
  return row?.live === true;
}

/**
 * Starting servers of a world (or all) past their readiness deadline, failed now with `error`;
 * returns them.
 */
export async function failOverdue(
  data: DataAccess,
  now: Date,
  error: string,
  worldId?: string,
): Promise<GameServerRow[]> {
  return executeBound<GameServerRow>(
    data,
    `update game_servers set status = 'failed', ended_at = $1, token_hash = null, error = $3
     where status = 'starting' and ready_deadline <= $1 and ($2::uuid is null or world_id = $2)
     returning ${COLUMNS}`,
    [now, worldId ?? null, error],
  );
}

/**
 * A server's own report. `ready: true` makes a starting server ready (within its deadline) at
 * `address`; the player count is taken when given, and once the server is ready, the join
 * reservations made before the report stop counting (the server sees those players now, or they
 * never came). Reservations made while it started still count after the report that makes it
 * ready: nobody had its address before. A ready server is busy now
 * when it becomes ready, and when it has players or had some until this report (the idle clock).
 * Undefined when the server is not live. The same statement takes the party follows owed for a
 * server it leaves ready (party-follows.ts), for the caller to send: of two nodes hearing of it,
 * the one whose statement made it ready has them.
 */
export async function applyReport(
  data: DataAccess,
  serverId: string,
  report: { ready: boolean; address: string | null; players: number | null },
  now: Date,
): Promise<ReportedServer | undefined> {
  const [row] = await executeBound<ReportedServer>(
    data,
    `with reported as (
       update game_servers set
         status = case when $2 then 'ready'::game_server_status else status end,
         address = case when $2 then $3 else address end,
         ready_at = case when $2 then coalesce(ready_at, $5) else ready_at end,
         players = coalesce($4, players),
         players_reported_at = case when $4::integer is null or status = 'starting' then players_reported_at else $5 end,
         busy_at = case
           when status = 'starting' and not $2 then busy_at
           when players > 0 or coalesce($4, players) > 0 then $5
           else coalesce(busy_at, $5) end
       where id = $1 and (status = 'ready' or (status = 'starting' and ready_deadline > $5))
       returning ${COLUMNS}),
     ${takeFollowsSql('reported')}
     select reported.*, coalesce((select json_agg(followed) from followed), '[]'::json) as follows from reported`,
    [serverId, report.ready, report.address, report.players, now],
  );
  return row;
}

/** The backend saw the server ready at `address` (Agones): like a report, without a player count. */
export async function markReady(
  data: DataAccess,
  serverId: string,
  address: string,
  now: Date,
): Promise<ReportedServer | undefined> {
  return applyReport(data, serverId, { ready: true, address, players: null }, now);
}

/**
 * Joins of one world take turns (a transaction-scoped advisory lock on the world id), so
 * concurrent joins see each other's reservations and spawns: ten joins start one server.
 */
export async function lockWorldJoins(data: DataAccess, worldId: string): Promise<void> {
  await lockNamed(data, `game_servers:${worldId}`);
}

/** The server if it is a live (starting or ready) server of the world: one a join may name. */
export async function liveServerOfWorld(
  data: DataAccess,
  serverId: string,
  worldId: string,
): Promise<GameServerRow | undefined> {
  const [row] = await executeBound<GameServerRow>(
    data,
    `select ${COLUMNS} from game_servers where id = $1 and world_id = $2 and status in ('starting', 'ready')`,
    [serverId, worldId],
  );
  return row;
}

/** Forgets a spawn the spawner refused before starting anything (capacity). */
export async function deleteServer(data: DataAccess, serverId: string): Promise<void> {
  await executeBound(data, 'delete from game_servers where id = $1', [serverId]);
}

/**
 * Spawns a user causes take turns (a transaction-scoped advisory lock on the user id), so the
 * count of their live servers and the spawn it admits are one step.
 */
export async function lockUserSpawns(data: DataAccess, userId: string): Promise<void> {
  await lockNamed(data, `game_servers:user:${userId}`);
}

/** How many live (starting or ready) servers a user caused, by a join or a spawn. */
export async function liveServersCausedBy(data: DataAccess, userId: string): Promise<number> {
  const [row] = await executeBound<{ count: number }>(
    data,
    `select count(*)::integer as count from game_servers
     where requested_by = $1 and status in ('starting', 'ready')`,
    [userId],
  );
  return row?.count ?? 0;
}

/**
 * The condition of a server idle since the time in parameter `since`: ready, no players in its
 * last report, not busy since then and no reservation live after it. Shared by the sweep's search
 * and its stop, which checks it again under the world's lock.
 */
const idleSince = (since: string) => `s.status = 'ready' and s.players = 0 and s.busy_at <= ${since}
  and not exists (select 1 from game_server_reservations r where r.server_id = s.id and r.expires_at > ${since})`;

/** Servers idle since `since` (at most 100 a sweep), oldest first. */
export async function idleServers(
  data: DataAccess,
  since: Date,
): Promise<{ id: string; world_id: string }[]> {
  return executeBound<{ id: string; world_id: string }>(
    data,
    `select s.id, s.world_id from game_servers s where ${idleSince('$1')} order by s.busy_at limit 100`,
    [since],
  );
}

/**
 * Stops a server if it is still idle since `since`, its token cleared; returns it when this call
 * stopped it. Of several nodes sweeping at once, one stops it: the others find it ended.
 */
export async function stopIfIdle(
  data: DataAccess,
  serverId: string,
  since: Date,
  outcome: { error: string; at: Date },
): Promise<GameServerRow | undefined> {
  const [row] = await executeBound<GameServerRow>(
    data,
    `update game_servers s set status = 'stopped', error = $3, ended_at = $4, token_hash = null
     where s.id = $1 and ${idleSince('$2')}
     returning ${COLUMNS}`,
    [serverId, since, outcome.error, outcome.at],
  );
  return row;
}

export interface AdminServerRow extends GameServerRow {
  world_owner_id: string;
  /** The row's keyset position: `created_at` to the microsecond. */
  created_key: string;
}

/**
 * A page of every server, newest first, for the administration list. The text depends only on
 * which filters are present (a few fixed texts, each prepared once), so each present filter is an
 * index condition on migration 0025's indexes; `running` is the starting and ready ones.
 */
export function adminServersPage(
  data: DataAccess,
  filter: { status?: GameServerStatusFilter | undefined; worldId?: string | undefined },
  page: { before: readonly [string, string] | undefined; limit: number },
): Promise<AdminServerRow[]> {
  const conditions = [beforeTimeIdKey('created_at', 'id')];
  const params: unknown[] = [page.limit, ...timeIdKeyParams(page.before)];
  if (filter.status === 'running') conditions.push(`status in ('starting', 'ready')`);
  else if (filter.status !== undefined) {
    params.push(filter.status);
    conditions.push(`status = $${params.length}::game_server_status`);
  }
  if (filter.worldId !== undefined) {
    params.push(filter.worldId);
    conditions.push(`world_id = $${params.length}::uuid`);
  }
  return executeBound<AdminServerRow>(
    data,
    `select ${COLUMNS}, ${worldOwnerSql('world_id')} as world_owner_id, ${timeKeySql('created_at')} as created_key
     from game_servers where ${conditions.join(' and ')}
     order by created_at desc, id desc limit $1`,
    params,
  );
}
