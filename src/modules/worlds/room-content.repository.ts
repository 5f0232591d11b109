import type { RoomChunk } from '../../../protocol/room-content.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import type { ChunkKey } from './chunks.repository.js';

/**
 * A room's chunks as of a content revision R: each chunk's newest revision with id <= R, left out
 * when that is a tombstone or when the chunk has none (created after R). Revision ids increase in
 * commit order within a world, so every revision <= R has committed once R was read, and later
 * statements see the same set. The lateral lookup is one probe of (chunk_id, id desc) per chunk,
 * as cheap as following the head, so a head newer than R needs no other path.
 */

/** How many chunks the room holds as of `asOf`. */
export async function countAsOf(data: DataAccess, roomId: string, asOf: number): Promise<number> {
  const [row] = await executeBound<{ n: string | number }>(
    data,
    `select count(*) as n from chunks c
     cross join lateral (
       select r.tombstone from chunk_revisions r
       where r.chunk_id = c.id and r.id <= $2 order by r.id desc limit 1
     ) v
     where c.room_id = $1 and not v.tombstone`,
    [roomId, asOf],
  );
  return Number(row?.n ?? 0);
}

/**
 * A page's statement: the first page's, or a later one's keyset after (:x, :y, :z). Two fixed
 * texts rather than a `:x is null or ...` test, which a generic plan cannot use as an index bound
 * (the last page of a large room would then scan the whole room).
 */
const pageSql = (keyset: string) =>
  `select p.x, p.y, p.z, p.revision, r.payload
   from (
     select h.*, sum(h.size) over (order by h.x, h.y, h.z) - h.size as before
     from (
       select c.x, c.y, c.z, v.id as revision, octet_length(v.payload) as size
       from chunks c
       cross join lateral (
         select r.id, r.payload, r.tombstone from chunk_revisions r
         where r.chunk_id = c.id and r.id <= :asOf order by r.id desc limit 1
       ) v
       where c.room_id = :roomId and not v.tombstone${keyset}
       order by c.x, c.y, c.z
       limit :limit
     ) h
   ) p
   join chunk_revisions r on r.id = p.revision
   where p.before < :maxBytes
   order by p.x, p.y, p.z`;
type FirstPage = { roomId: string; asOf: number; limit: number; maxBytes: number };
type NextPage = FirstPage & ChunkKey;
const FIRST_PAGE = namedSql<FirstPage>(pageSql(''));
const NEXT_PAGE = namedSql<NextPage>(pageSql(' and (c.x, c.y, c.z) > (:x, :y, :z)'));

interface PageRow {
  x: number;
  y: number;
  z: number;
  revision: string | number;
  payload: Uint8Array;
}

/**
 * The room's chunks as of `asOf` after `after` in (x, y, z) order: at most `limit`, and cut once
 * the payloads before a chunk reach `maxBytes` (a page always holds at least one chunk). Sizes are
 * summed from octet_length, which reads no payload; only the kept rows fetch theirs.
 */
export async function pageAsOf(
  data: DataAccess,
  roomId: string,
  asOf: number,
  page: { after: ChunkKey | undefined; limit: number; maxBytes: number },
): Promise<RoomChunk[]> {
  const { after, limit, maxBytes } = page;
  const first: FirstPage = { roomId, asOf, limit, maxBytes };
  const rows = after
    ? await executeNamed<PageRow, NextPage>(data, NEXT_PAGE, { ...first, x: after.x, y: after.y, z: after.z })
    : await executeNamed<PageRow, FirstPage>(data, FIRST_PAGE, first);
  return rows.map((r) => ({ x: r.x, y: r.y, z: r.z, revision: Number(r.revision), payload: r.payload }));
}
