import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
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
// Bounds as coalesce(...) rather than ":before is null or ...", so they stay index conditions.
const RANGE =
  'id < coalesce(:before::bigint, 9223372036854775807) and id > coalesce(:after::bigint, 0) order by id desc limit :limit';
type Bounds = { before: number | null; after: number | null; limit: number };
type InWorld = Bounds & { worldId: string };
type InRoom = Bounds & { roomId: string };
type OfChunk = InRoom & ChunkKey;
const BY_WORLD = namedSql<InWorld>(
  `select ${COLUMNS} from chunk_revisions where world_id = :worldId and ${RANGE}`,
);
const BY_ROOM = namedSql<InRoom>(
  `select ${COLUMNS} from chunk_revisions where room_id = :roomId and ${RANGE}`,
);
const BY_CHUNK = namedSql<OfChunk>(`select ${COLUMNS} from chunk_revisions
  where chunk_id = (select id from chunks where room_id = :roomId and x = :x and y = :y and z = :z) and ${RANGE}`);

export async function revisionsPage(
  data: DataAccess,
  scope: HistoryScope,
  range: IdRange,
): Promise<RevisionRow[]> {
  const bounds: Bounds = { before: range.before ?? null, after: range.after ?? null, limit: range.limit };
  const rows =
    'worldId' in scope
      ? await executeNamed<RawRevision, InWorld>(data, BY_WORLD, { ...bounds, worldId: scope.worldId })
      : scope.key
        ? await executeNamed<RawRevision, OfChunk>(data, BY_CHUNK, {
            ...bounds,
            roomId: scope.roomId,
            ...scope.key,
          })
        : await executeNamed<RawRevision, InRoom>(data, BY_ROOM, { ...bounds, roomId: scope.roomId });
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
