import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import type { ChunkKey } from './chunks.repository.js';

/**
 * The SQL of revision history: keyset pages of `chunk_revisions`, newest first. Each scope has its
 * own statement so each is one range scan of its own index: (world_id, id desc), (room_id, id desc)
 * and (chunk_id, id desc). Payloads are never read: octet_length takes a bytea's length from its
 * header, without fetching or decompressing a TOASTed value.
 */

export interface RevisionRow extends ChunkKey {
  id: number;
  roomId: string;
  deleted: boolean;
  size: number;
  authorId: string | null;
  createdAt: Date;
}

/** Whose revisions: a world's, a room's, or one chunk's. */
export type HistoryScope = { worldId: string } | { roomId: string; key?: ChunkKey };

/** Revisions with `after` < id < `before` (either bound may be absent), at most `limit`. */
export interface IdRange {
  before: number | undefined;
  after: number | undefined;
  limit: number;
}

interface RawRevision extends ChunkKey {
  id: string | number;
  room_id: string;
  tombstone: boolean;
  size: number;
  author_id: string | null;
  created_at: Date | string;
}

const COLUMNS =
  'id, room_id, x, y, z, tombstone, coalesce(octet_length(payload), 0) as size, author_id, created_at';
// Bounds as coalesce(...) rather than "$2 is null or ...", so they stay index conditions.
const RANGE =
  'id < coalesce($2::bigint, 9223372036854775807) and id > coalesce($3::bigint, 0) order by id desc limit $4';
const BY_WORLD = `select ${COLUMNS} from chunk_revisions where world_id = $1 and ${RANGE}`;
const BY_ROOM = `select ${COLUMNS} from chunk_revisions where room_id = $1 and ${RANGE}`;
const BY_CHUNK = `select ${COLUMNS} from chunk_revisions
  where chunk_id = (select id from chunks where room_id = $1 and x = $5 and y = $6 and z = $7) and ${RANGE}`;

export async function revisionsPage(
  data: DataAccess,
  scope: HistoryScope,
  range: IdRange,
): Promise<RevisionRow[]> {
  const bounds = [range.before ?? null, range.after ?? null, range.limit];
  const rows =
    'worldId' in scope
      ? await executeBound<RawRevision>(data, BY_WORLD, [scope.worldId, ...bounds])
      : scope.key
        ? await executeBound<RawRevision>(data, BY_CHUNK, [
            scope.roomId,
            ...bounds,
            scope.key.x,
            scope.key.y,
            scope.key.z,
          ])
        : await executeBound<RawRevision>(data, BY_ROOM, [scope.roomId, ...bounds]);
  return rows.map((r) => ({
    id: Number(r.id),
    roomId: r.room_id,
    x: r.x,
    y: r.y,
    z: r.z,
    deleted: r.tombstone,
    size: Number(r.size),
    authorId: r.author_id,
    createdAt: new Date(r.created_at),
  }));
}

/**
 * Plans this transaction's statements for their actual values. A statement prepared once per
 * connection may otherwise settle on a generic plan that pages a small world by walking the
 * primary key backwards through every newer revision of the other worlds (seen with EXPLAIN).
 */
export async function planForValues(data: DataAccess): Promise<void> {
  await executeBound(data, 'set local plan_cache_mode = force_custom_plan', []);
}

/** The world's history horizon (docs/worlds.md, "Retention"): revisions before it may be pruned. */
export async function historyHorizon(data: DataAccess, worldId: string): Promise<number> {
  const [row] = await executeBound<{ history_horizon: string | number }>(
    data,
    'select history_horizon from worlds where id = $1',
    [worldId],
  );
  return Number(row?.history_horizon ?? 0);
}
