import type { DiscoveryCategory } from '../../../protocol/discovery.js';
import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/**
 * The SQL of discovery metadata and visits (migrations 0015 and 0018). Joins only append (a visit
 * row, a first-visit row); the fold job moves them into the counters and hourly buckets.
 */

export interface DiscoveryRow {
  world_id: string;
  owner_id: string;
  title: string;
  description: string;
  tags: string[];
  category: DiscoveryCategory;
  thumbnail_asset_id: string | null;
  visit_count: string | number;
  unique_visitors: string | number;
  last_visited_at: Date | null;
  world_created_at: Date;
  updated_at: Date;
  /** The creation time to the microsecond: the `new` order's keyset position. */
  created_key: string;
}

export const DISCOVERY_COLUMNS = `d.world_id, d.owner_id, coalesce(d.title, d.world_name) as title,
  coalesce(d.description, d.world_description) as description, d.tags, d.category, d.thumbnail_asset_id,
  d.visit_count, d.unique_visitors, d.last_visited_at, d.world_created_at, d.updated_at,
  ${timeKeySql('d.world_created_at')} as created_key`;

/** What discovery keeps of a world, written in the world's own create and update transactions. */
export interface WorldCopy {
  id: string;
  ownerId: string;
  name: string;
  description: string;
  visibility: string;
  createdAt: Date;
  updatedAt: Date;
}

type SyncParams = Omit<WorldCopy, 'visibility'> & { isPublic: boolean };

const SYNC_WORLD = namedSql<SyncParams>(
  `insert into world_discovery (world_id, owner_id, world_name, world_description, is_public, world_created_at, updated_at)
   values (:id, :ownerId, :name, :description, :isPublic, :createdAt, :updatedAt)
   on conflict (world_id) do update set owner_id = excluded.owner_id, world_name = excluded.world_name,
     world_description = excluded.world_description, is_public = excluded.is_public,
     world_created_at = excluded.world_created_at, updated_at = excluded.updated_at`,
);

export async function syncWorld(data: DataAccess, world: WorldCopy): Promise<void> {
  await executeNamed<unknown, SyncParams>(data, SYNC_WORLD, {
    ...world,
    isPublic: world.visibility === 'public',
  });
}

export async function discoveryOf(data: DataAccess, worldId: string): Promise<DiscoveryRow | undefined> {
  const [row] = await executeBound<DiscoveryRow>(
    data,
    `select ${DISCOVERY_COLUMNS} from world_discovery d where d.world_id = $1`,
    [worldId],
  );
  return row;
}

interface UpdateParams {
  worldId: string;
  title: string | null;
  description: string | null;
  tags: string[] | null;
  category: DiscoveryCategory | null;
  setsThumbnail: boolean;
  thumbnail: string | null;
  at: Date;
}

const UPDATE_DISCOVERY = namedSql<UpdateParams>(
  `update world_discovery d
   set title = coalesce(:title, d.title), description = coalesce(:description, d.description),
     tags = coalesce(:tags::text[], d.tags), category = coalesce(:category, d.category),
     thumbnail_asset_id = case when :setsThumbnail then :thumbnail else d.thumbnail_asset_id end, updated_at = :at
   where d.world_id = :worldId
   returning ${DISCOVERY_COLUMNS}`,
);

/** Sets the fields given (undefined: unchanged; a null thumbnail clears it). */
export async function updateDiscovery(
  data: DataAccess,
  worldId: string,
  change: {
    title?: string | undefined;
    description?: string | undefined;
    tags?: string[] | undefined;
    category?: DiscoveryCategory | undefined;
    thumbnail?: { id: string | null } | undefined;
    at: Date;
  },
): Promise<DiscoveryRow | undefined> {
  const [row] = await executeNamed<DiscoveryRow, UpdateParams>(data, UPDATE_DISCOVERY, {
    worldId,
    title: change.title ?? null,
    description: change.description ?? null,
    tags: change.tags ?? null,
    category: change.category ?? null,
    setsThumbnail: change.thumbnail !== undefined,
    thumbnail: change.thumbnail?.id ?? null,
    at: change.at,
  });
  return row;
}

/**
 * Records a join as a visit: one appended row, and a first-visit row unless the user visited
 * before. Nothing other joins write is touched, so a hot world's joins do not queue here.
 */
export async function recordVisit(
  data: DataAccess,
  visit: { id: string; worldId: string; userId: string; serverId: string; at: Date },
): Promise<void> {
  await executeBound(
    data,
    `with visit as (
       insert into world_visits (id, world_id, user_id, server_id, visited_at) values ($1, $2, $3, $4, $5))
     insert into world_visitors (world_id, user_id, first_visited_at) values ($2, $3, $5)
     on conflict do nothing`,
    [visit.id, visit.worldId, visit.userId, visit.serverId, visit.at],
  );
}

/**
 * Adds up to `limit` unfolded visits to their worlds' counters and hourly buckets, marking them
 * folded in the same statement: each visit is counted once, whatever happens to the process.
 * Answers how many it folded.
 */
export async function foldVisits(data: DataAccess, limit: number): Promise<number> {
  const [row] = await executeBound<{ n: number }>(
    data,
    `with visits as (
       update world_visits set folded = true
       where id in (select id from world_visits where not folded order by visited_at limit $1 for update skip locked)
       returning world_id, visited_at),
     hours as (
       insert into world_visit_hours (world_id, hour, visits)
       select world_id, date_trunc('hour', visited_at), count(*) from visits group by 1, 2
       on conflict (world_id, hour) do update set visits = world_visit_hours.visits + excluded.visits),
     counts as (select world_id, count(*) as n, max(visited_at) as last from visits group by 1),
     counted as (
       update world_discovery d set visit_count = d.visit_count + c.n,
         last_visited_at = greatest(d.last_visited_at, c.last)
       from counts c where d.world_id = c.world_id)
     select count(*)::int as n from visits`,
    [limit],
  );
  return row?.n ?? 0;
}

/** The same for first visits: each adds one to its world's unique visitors, once. */
export async function foldVisitors(data: DataAccess, limit: number): Promise<number> {
  const [row] = await executeBound<{ n: number }>(
    data,
    `with visitors as (
       update world_visitors set folded = true
       where (world_id, user_id) in (
         select world_id, user_id from world_visitors where not folded order by first_visited_at limit $1
         for update skip locked)
       returning world_id),
     counts as (select world_id, count(*) as n from visitors group by 1),
     counted as (
       update world_discovery d set unique_visitors = d.unique_visitors + c.n from counts c where d.world_id = c.world_id)
     select count(*)::int as n from visitors`,
    [limit],
  );
  return row?.n ?? 0;
}

/** Drops hourly buckets older than the popular window needs. */
export async function pruneVisitHours(data: DataAccess, before: Date): Promise<void> {
  await executeBound(data, 'delete from world_visit_hours where hour < $1', [before]);
}
