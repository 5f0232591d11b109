import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/**
 * The SQL of a rollback. Payloads never leave the database: each page statement copies the
 * revisions it restores with `insert ... select`, so the service process holds ids and counts only,
 * whatever the size of the world.
 */

/** How much one page statement restores: at most this many chunks... */
export const ROLLBACK_PAGE_CHUNKS = 256;
/**
 * ...and at most this many payload bytes (a page always restores at least one chunk, so a page
 * of one chunk may hold up to MAX_CHUNK_BYTES). Copying a MiB takes some 5 ms on an idle Postgres
 * and 10 ms in PGlite, which runs in the service process and holds its event loop for the whole
 * statement, several times that on a busy machine: a page stays well inside
 * DATABASE_QUERY_TIMEOUT_MS, and short enough that the process keeps answering (measured:
 * bench/results/worlds-rollback.md).
 */
export const ROLLBACK_PAGE_BYTES = 4 * 1024 * 1024;

/** Where a world's history stands, read under the world's lock before a rollback. */
export interface RollbackBounds {
  /** The oldest revision a rollback may target (besides 0). */
  horizon: number;
  /** The payload bytes the world stores, live and kept history. */
  storedBytes: number;
  /** Whether the target is a revision of this world. */
  targetExists: boolean;
}

export async function rollbackBounds(
  data: DataAccess,
  worldId: string,
  target: number,
): Promise<RollbackBounds> {
  const [row] = await executeBound<{
    history_horizon: string | number;
    stored_bytes: string | number;
    target_exists: boolean;
  }>(
    data,
    `select history_horizon, stored_bytes,
       exists (select 1 from chunk_revisions where id = $2 and world_id = $1) as target_exists
     from worlds where id = $1`,
    [worldId, target],
  );
  return {
    horizon: Number(row?.history_horizon ?? 0),
    storedBytes: Number(row?.stored_bytes ?? 0),
    targetExists: row?.target_exists ?? false,
  };
}

/** What one page restored. */
export interface RestoredPage {
  /** Chunks the page restored (one revision each). */
  restored: number;
  /** Whether chunks after `lastChunk` may still need restoring. */
  more: boolean;
  /** The id of the last chunk the page looked at: the next page starts after it. */
  lastChunk: number;
  /** The largest revision id the page appended. */
  lastRevision: number;
  /** The payload bytes of the revisions the page appended (tombstones weigh nothing). */
  addedBytes: number;
  /** The rooms of the chunks restored. */
  rooms: string[];
}

interface PageParams {
  worldId: string;
  target: number;
  afterChunk: number;
  pageChunks: number;
  pageBytes: number;
  authorId: string;
  now: Date;
}

interface PageRow {
  candidates: number;
  restored: number;
  last_chunk: string | number | null;
  last_revision: string | number | null;
  added_bytes: string | number;
  rooms: string[] | null;
}

const RESTORE_PAGE = namedSql<PageParams>(
  `with candidates as (
     select c.id as chunk_id, c.room_id, c.x, c.y, c.z, t.id as source, t.bytes as new_bytes
     from chunks c
     left join lateral (
       select r.id, octet_length(r.payload) as bytes from chunk_revisions r
       where r.chunk_id = c.id and r.id <= :target order by r.id desc limit 1
     ) t on true
     where c.world_id = :worldId and c.id > :afterChunk and c.revision > :target and not (c.deleted and t.bytes is null)
     order by c.id limit :pageChunks
   ), page as (
     select s.*, nextval('chunk_revision_ids') as revision from (
       select candidates.*, sum(coalesce(new_bytes, 0)) over (order by chunk_id) as bytes_through
       from candidates
     ) s where s.bytes_through <= :pageBytes or s.chunk_id = (select min(chunk_id) from candidates)
   ), appended as (
     insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id, created_at)
     select p.revision, p.chunk_id, :worldId, p.room_id, p.x, p.y, p.z, s.payload, s.payload is null, :authorId, :now
     from page p left join chunk_revisions s on s.id = p.source
   ), heads as (
     update chunks c set revision = p.revision, deleted = p.new_bytes is null
     from page p where c.id = p.chunk_id
   )
   select (select count(*)::int from candidates) as candidates, count(*)::int as restored,
     max(chunk_id) as last_chunk, max(revision) as last_revision,
     coalesce(sum(new_bytes), 0) as added_bytes,
     array_agg(distinct room_id::text) as rooms
   from page`,
);

/**
 * Restores the next page of the world's chunks (in chunk id order, after `afterChunk`) as they
 * were at `target`, in one statement: each chunk changed since gets a new revision copied from
 * its newest revision at or below `target` (a tombstone when there was none, or it was one), and
 * its head moves there. Chunks already deleted and absent at `target` need nothing and are
 * skipped. The caller holds the world's lock, so the revision ids drawn here increase in commit
 * order within the world; the world's row is moved once at the end (finishRollback).
 */
export async function restorePage(
  data: DataAccess,
  page: { worldId: string; target: number; afterChunk: number; authorId: string; now: Date },
): Promise<RestoredPage> {
  const [row] = await executeNamed<PageRow, PageParams>(data, RESTORE_PAGE, {
    ...page,
    pageChunks: ROLLBACK_PAGE_CHUNKS,
    pageBytes: ROLLBACK_PAGE_BYTES,
  });
  const candidates = row?.candidates ?? 0;
  const restored = row?.restored ?? 0;
  return {
    restored,
    // A full page of candidates may have more behind it; a page cut short by its bytes has.
    more: candidates === ROLLBACK_PAGE_CHUNKS || restored < candidates,
    lastChunk: Number(row?.last_chunk ?? page.afterChunk),
    lastRevision: Number(row?.last_revision ?? 0),
    addedBytes: Number(row?.added_bytes ?? 0),
    rooms: row?.rooms ?? [],
  };
}

/**
 * Records a rollback's commit in the world's row: its content revision (the largest id it drew),
 * the stream sequence, the payload bytes its revisions added to what the world stores and that
 * its history is due for a pass. Returns the new stream sequence number.
 */
export async function finishRollback(
  data: DataAccess,
  commit: { worldId: string; contentRevision: number; addedBytes: number; now: Date },
): Promise<number> {
  const [row] = await executeBound<{ stream_seq: string | number }>(
    data,
    `update worlds set content_revision = $2, updated_at = $3, stream_seq = stream_seq + 1,
       stored_bytes = stored_bytes + $4, history_due_at = least(history_due_at, $3)
     where id = $1 returning stream_seq`,
    [commit.worldId, commit.contentRevision, commit.now, commit.addedBytes],
  );
  return Number(row?.stream_seq);
}
