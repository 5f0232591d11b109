import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../../platform/db.js';

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
  em: EntityManager,
  roomId: string,
  options: { after?: ChunkKey; limit: number },
): Promise<ChunkHead[]> {
  const { after, limit } = options;
  const rows = await executeBound<{ x: number; y: number; z: number; revision: string | number }>(
    em,
    `select x, y, z, revision from chunks
     where room_id = $1 and not deleted and ($2::int is null or (x, y, z) > ($2, $3, $4))
     order by x, y, z limit $5`,
    [roomId, after?.x ?? null, after?.y ?? null, after?.z ?? null, limit],
  );
  return rows.map((r) => ({ x: r.x, y: r.y, z: r.z, revision: Number(r.revision) }));
}
