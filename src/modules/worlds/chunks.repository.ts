import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/** The SQL of chunks and their revisions (revision ids normalised to numbers, as in worlds.repository). */

export interface ChunkKey {
  x: number;
  y: number;
  z: number;
}

export interface ChunkHead extends ChunkKey {
  revision: number;
}

/** A room's live chunks (tombstones left out) after `after` in (x, y, z) order, at most `limit`. */
export async function liveChunkHeads(
  data: DataAccess,
  roomId: string,
  options: { after?: ChunkKey; limit: number },
): Promise<ChunkHead[]> {
  const { after, limit } = options;
  const rows = await executeBound<{ x: number; y: number; z: number; revision: string | number }>(
    data,
    `select x, y, z, revision from chunks
     where room_id = $1 and not deleted and ($2::int is null or (x, y, z) > ($2, $3, $4))
     order by x, y, z limit $5`,
    [roomId, after?.x ?? null, after?.y ?? null, after?.z ?? null, limit],
  );
  return rows.map((r) => ({ x: r.x, y: r.y, z: r.z, revision: Number(r.revision) }));
}

/** Where a chunk's head stands: its current revision and whether that is a tombstone. */
export interface HeadState {
  revision: number;
  deleted: boolean;
}

/** A chunk of a world, addressed by room and coordinates. */
export interface ChunkAddress {
  roomId: string;
  key: ChunkKey;
}

/** What a commit learns in one statement once it holds the world's lock. */
export interface CommitPlan {
  /** Which of the rooms asked about belong to the world. */
  rooms: Set<string>;
  /** Each write's chunk head, in the writes' order; undefined for a chunk never written. */
  heads: (HeadState | undefined)[];
  /** One fresh revision id per write, increasing. */
  revisions: number[];
  /** The payload bytes the world stores before the commit, live and kept history. */
  storedBytes: number;
}

interface PlanParams {
  worldId: string;
  roomIds: readonly string[];
  /** The writes' addresses, column by column. */
  chunkRooms: string[];
  xs: number[];
  ys: number[];
  zs: number[];
  count: number;
}

interface PlanRow {
  rooms: string[] | null;
  heads: [number, number | string, boolean][] | null;
  ids: (string | number)[];
  stored_bytes: string | number;
}

const PREPARE_COMMIT = namedSql<PlanParams>(
  `select
     (select array_agg(id::text) from rooms where world_id = :worldId and id = any(:roomIds::uuid[])) as rooms,
     (select json_agg(json_build_array(k.i, c.revision, c.deleted))
        from unnest(:chunkRooms::uuid[], :xs::int[], :ys::int[], :zs::int[]) with ordinality as k (room_id, x, y, z, i)
        join chunks c on c.room_id = k.room_id and c.x = k.x and c.y = k.y and c.z = k.z) as heads,
     (select array_agg(nextval('chunk_revision_ids')) from generate_series(1, :count)) as ids,
     (select stored_bytes from worlds where id = :worldId) as stored_bytes`,
);

/**
 * Reads, in one round trip, what a commit to a locked world checks and needs: which rooms exist,
 * the heads of the chunks written, the world's stored bytes, and a revision id per write. It must
 * run after the lock is taken (not in the locking statement): a statement reads as of its start,
 * and a writer that waited for the lock must see the commit it waited for.
 */
export async function prepareCommit(
  data: DataAccess,
  worldId: string,
  roomIds: readonly string[],
  writes: readonly ChunkAddress[],
): Promise<CommitPlan> {
  const [chunkRooms, xs, ys, zs] = columns(writes);
  const [row] = await executeNamed<PlanRow, PlanParams>(data, PREPARE_COMMIT, {
    worldId,
    roomIds,
    chunkRooms,
    xs,
    ys,
    zs,
    count: writes.length,
  });
  const heads: (HeadState | undefined)[] = writes.map(() => undefined);
  for (const [i, revision, deleted] of row?.heads ?? [])
    heads[i - 1] = { revision: Number(revision), deleted };
  return {
    rooms: new Set(row?.rooms ?? []),
    heads,
    revisions: (row?.ids ?? []).map(Number).sort((a, b) => a - b),
    storedBytes: Number(row?.stored_bytes ?? 0),
  };
}

function columns(addresses: readonly ChunkAddress[]): [string[], number[], number[], number[]] {
  return [
    addresses.map((a) => a.roomId),
    addresses.map((a) => a.key.x),
    addresses.map((a) => a.key.y),
    addresses.map((a) => a.key.z),
  ];
}

/** A live chunk's current payload and revision; undefined for a missing or deleted chunk. */
export async function livePayload(
  data: DataAccess,
  roomId: string,
  key: ChunkKey,
): Promise<{ revision: number; payload: Uint8Array } | undefined> {
  const [row] = await executeBound<{ revision: string | number; payload: Uint8Array }>(
    data,
    `select c.revision, r.payload from chunks c join chunk_revisions r on r.id = c.revision
     where c.room_id = $1 and c.x = $2 and c.y = $3 and c.z = $4 and not c.deleted`,
    [roomId, key.x, key.y, key.z],
  );
  return row && { revision: Number(row.revision), payload: row.payload };
}

/** One revision to append: codec bytes, or null for a tombstone. */
export interface RevisionWrite extends ChunkAddress {
  payload: Uint8Array | null;
}

interface CommitParams {
  roomIds: string[];
  xs: number[];
  ys: number[];
  zs: number[];
  ids: readonly number[];
  payloads: (Uint8Array | null)[];
  worldId: string;
  authorId: string | null;
  now: Date;
  contentRevision: number;
  addedBytes: number;
}

const WRITE_COMMIT = namedSql<CommitParams>(
  `with w (room_id, x, y, z, id, payload) as (
     select * from unnest(:roomIds::uuid[], :xs::int[], :ys::int[], :zs::int[], :ids::bigint[], :payloads::bytea[])
   ), heads as (
     insert into chunks (room_id, world_id, x, y, z, revision, deleted)
     select room_id, :worldId, x, y, z, id, payload is null from w
     on conflict (room_id, x, y, z) do update set revision = excluded.revision, deleted = excluded.deleted
     returning id as chunk_id, room_id, x, y, z
   ), appended as (
     insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id, created_at)
     select w.id, h.chunk_id, :worldId, w.room_id, w.x, w.y, w.z, w.payload, w.payload is null, :authorId, :now
     from w join heads h on h.room_id = w.room_id and h.x = w.x and h.y = w.y and h.z = w.z
   )
   update worlds set content_revision = :contentRevision, updated_at = :now, stream_seq = stream_seq + 1,
     stored_bytes = stored_bytes + :addedBytes, history_due_at = least(history_due_at, :now)
   where id = :worldId returning stream_seq`,
);

/**
 * Appends one revision per write (ids from prepareCommit, in the writes' order), moves each
 * chunk's head to it (creating chunks on their first write) and records the commit in the world's
 * row, all in one statement: the content revision, the stream sequence, the payload bytes the
 * commit adds to what the world stores (`addedBytes`: every new payload counts whole, since the
 * revisions it supersedes stay as history) and that the world's history is due for a pruning
 * pass. Returns the world's new stream sequence number. The caller holds the
 * world's lock, so the ids increase in commit order within the world and the largest is its
 * content revision. No chunk may appear twice in `writes`.
 */
export async function writeCommit(
  data: DataAccess,
  commit: {
    worldId: string;
    authorId: string | null;
    now: Date;
    writes: readonly RevisionWrite[];
    revisions: readonly number[];
    addedBytes: number;
  },
): Promise<number> {
  const { worldId, authorId, now, writes, revisions, addedBytes } = commit;
  const [roomIds, xs, ys, zs] = columns(writes);
  const [row] = await executeNamed<{ stream_seq: string | number }, CommitParams>(data, WRITE_COMMIT, {
    roomIds,
    xs,
    ys,
    zs,
    ids: revisions,
    payloads: writes.map((w) => w.payload),
    worldId,
    authorId,
    now,
    contentRevision: Math.max(...revisions),
    addedBytes,
  });
  return Number(row?.stream_seq);
}
