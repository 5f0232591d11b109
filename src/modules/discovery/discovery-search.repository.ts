import type { DiscoveryCategory } from '../../../protocol/discovery.js';
import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { DISCOVERY_COLUMNS, type DiscoveryRow } from './discovery.repository.js';

/**
 * Search over public worlds (migration 0018's indexes) and the ranked snapshots popular and
 * trending pages read. Each combination of filters is its own statement text, so a prepared
 * statement's generic plan still uses the index of the filter it has.
 */

export interface SearchFilters {
  q?: string | undefined;
  tags?: readonly string[] | undefined;
  category?: DiscoveryCategory | undefined;
}

const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
const MAX_BIGINT = '9223372036854775807';

/**
 * The filter conditions, with their parameters numbered from `first`: on the world's discovery row
 * `d`, except, on a ranked page, the tags and category, which are the snapshot's (`r`, migration
 * 0026): its rank index tests them while it walks the score order, so only matches are joined.
 * Testing `d`'s as well would be right for a world changed since the snapshot, but the planner
 * counts the same test twice, expects a tenth of the rows and picks a parallel plan ten times
 * slower. The text and whether the world is public are always the world's own.
 */
function filtersOf(
  filters: SearchFilters,
  first: number,
  ranked = false,
): { sql: string; params: unknown[] } {
  const conditions = ['d.is_public'];
  const params: unknown[] = [];
  const next = () => `$${first + params.length}`;
  const snapshotted = ranked ? 'r' : 'd';
  if (filters.q !== undefined) {
    conditions.push(`d.search @@ websearch_to_tsquery('simple', ${next()})`);
    params.push(filters.q);
  }
  if (filters.tags?.length) {
    conditions.push(`${snapshotted}.tags @> ${next()}::text[]`);
    params.push(filters.tags);
  }
  if (filters.category !== undefined) {
    conditions.push(`${snapshotted}.category = ${next()}`);
    params.push(filters.category);
  }
  return { sql: conditions.join(' and '), params };
}

/** Public worlds newest first, after the (created, id) key. */
export function newestPage(
  data: DataAccess,
  filters: SearchFilters,
  page: { before: readonly [string, string] | undefined; limit: number },
): Promise<DiscoveryRow[]> {
  const where = filtersOf(filters, 4);
  return executeBound<DiscoveryRow>(
    data,
    `select ${DISCOVERY_COLUMNS} from world_discovery d
     where ${where.sql}
       and (d.world_created_at, d.world_id) < (coalesce($1::timestamptz, 'infinity'), coalesce($2::uuid, '${MAX_UUID}'))
     order by d.world_created_at desc, d.world_id desc
     limit $3`,
    [page.before?.[0] ?? null, page.before?.[1] ?? null, page.limit, ...where.params],
  );
}

export type RankedSort = 'popular' | 'trending';
export type RankKey = readonly [score: number, createdKey: string, worldId: string];

export interface RankedRow extends DiscoveryRow {
  score: string | number;
}

/** Public worlds of one snapshot by score, then newest first, after the key. */
export function rankedPage(
  data: DataAccess,
  sort: RankedSort,
  filters: SearchFilters,
  page: { snapshot: string; after: RankKey | undefined; limit: number },
): Promise<RankedRow[]> {
  const where = filtersOf(filters, 6, true);
  const score = sort === 'popular' ? 'r.popular' : 'r.trending';
  return executeBound<RankedRow>(
    data,
    `select ${DISCOVERY_COLUMNS}, ${score} as score from discovery_ranks r
     join world_discovery d on d.world_id = r.world_id
     where r.snapshot_at = $1 and ${where.sql}
       and (${score}, r.world_created_at, r.world_id)
         < (coalesce($2::bigint, ${MAX_BIGINT}), coalesce($3::timestamptz, 'infinity'), coalesce($4::uuid, '${MAX_UUID}'))
     order by ${score} desc, r.world_created_at desc, r.world_id desc
     limit $5`,
    [
      page.snapshot,
      page.after?.[0] ?? null,
      page.after?.[1] ?? null,
      page.after?.[2] ?? null,
      page.limit,
      ...where.params,
    ],
  );
}

/** The newest snapshot's time (as a key), if any. */
export async function latestSnapshot(data: DataAccess): Promise<string | undefined> {
  const [row] = await executeBound<{ key: string | null }>(
    data,
    `select ${timeKeySql('max(snapshot_at)')} as key from discovery_ranks`,
    [],
  );
  return row?.key ?? undefined;
}

export async function snapshotExists(data: DataAccess, snapshot: string): Promise<boolean> {
  const rows = await executeBound(data, 'select 1 from discovery_ranks where snapshot_at = $1 limit 1', [
    snapshot,
  ]);
  return rows.length > 0;
}

/**
 * Ranks every public world as of `at` into a new snapshot: popular is its visits in the 168 hourly
 * buckets up to `at`'s hour, trending those of the last 24 minus the 24 before; its tags and
 * category go with it, for the filters of a ranked page. Snapshots older
 * than `keepAfter` go, except the new one.
 */
export async function takeSnapshot(data: DataAccess, at: Date, keepAfter: Date): Promise<void> {
  await executeBound(
    data,
    `insert into discovery_ranks (snapshot_at, world_id, popular, trending, world_created_at, tags, category)
     select $1, d.world_id,
       coalesce(sum(h.visits), 0),
       coalesce(sum(h.visits) filter (where h.hour > $1::timestamptz - interval '24 hours'), 0)
         - coalesce(sum(h.visits) filter (where h.hour <= $1::timestamptz - interval '24 hours'
                                            and h.hour > $1::timestamptz - interval '48 hours'), 0),
       d.world_created_at, d.tags, d.category
     from world_discovery d
     left join world_visit_hours h on h.world_id = d.world_id and h.hour > $1::timestamptz - interval '168 hours'
     where d.is_public
     group by d.world_id`,
    [at],
  );
  await executeBound(data, 'delete from discovery_ranks where snapshot_at < $1 and snapshot_at <> $2', [
    keepAfter,
    at,
  ]);
}
