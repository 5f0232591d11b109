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

/** Where a chunk's head stands: its row id, current revision and whether that is a tombstone. */
export interface HeadState {
  chunkId: number;
  revision: number;
  deleted: boolean;
}

export async function headAt(
  em: EntityManager,
  roomId: string,
  key: ChunkKey,
): Promise<HeadState | undefined> {
  const [row] = await executeBound<{ id: string | number; revision: string | number; deleted: boolean }>(
    em,
    'select id, revision, deleted from chunks where room_id = $1 and x = $2 and y = $3 and z = $4',
    [roomId, key.x, key.y, key.z],
  );
  return row && { chunkId: Number(row.id), revision: Number(row.revision), deleted: row.deleted };
}

/** A live chunk's current payload and revision; undefined for a missing or deleted chunk. */
export async function livePayload(
  em: EntityManager,
  roomId: string,
  key: ChunkKey,
): Promise<{ revision: number; payload: Uint8Array } | undefined> {
  const [row] = await executeBound<{ revision: string | number; payload: Uint8Array }>(
    em,
    `select c.revision, r.payload from chunks c join chunk_revisions r on r.id = c.revision
     where c.room_id = $1 and c.x = $2 and c.y = $3 and c.z = $4 and not c.deleted`,
    [roomId, key.x, key.y, key.z],
  );
  return row && { revision: Number(row.revision), payload: row.payload };
}

/**
 * Appends a revision (a payload, or null for a tombstone) and moves the chunk's head to it,
 * creating the chunk on its first write; returns the revision id. The caller holds the world's
 * lock (lockWorld), so ids drawn here increase in commit order within the world.
 */
export async function appendRevision(
  em: EntityManager,
  write: {
    worldId: string;
    roomId: string;
    key: ChunkKey;
    head: HeadState | undefined;
    payload: Uint8Array | null;
    authorId: string;
    now: Date;
  },
): Promise<number> {
  const { worldId, roomId, key, head, payload, authorId, now } = write;
  const [drawn] = await executeBound<{ id: string | number }>(
    em,
    "select nextval('chunk_revision_ids') as id",
    [],
  );
  const revision = Number(drawn?.id);
  const deleted = payload === null;
  let chunkId = head?.chunkId;
  if (chunkId === undefined) {
    const [created] = await executeBound<{ id: string | number }>(
      em,
      'insert into chunks (room_id, world_id, x, y, z, revision, deleted) values ($1, $2, $3, $4, $5, $6, $7) returning id',
      [roomId, worldId, key.x, key.y, key.z, revision, deleted],
    );
    chunkId = Number(created?.id);
  } else {
    await executeBound(em, 'update chunks set revision = $2, deleted = $3 where id = $1', [
      chunkId,
      revision,
      deleted,
    ]);
  }
  await executeBound(
    em,
    `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [revision, chunkId, worldId, roomId, key.x, key.y, key.z, payload, deleted, authorId, now],
  );
  return revision;
}

/** Records the world's newest revision (the largest, since the writer holds the world's lock). */
export async function setContentRevision(
  em: EntityManager,
  worldId: string,
  revision: number,
  now: Date,
): Promise<void> {
  await executeBound(em, 'update worlds set content_revision = $2, updated_at = $3 where id = $1', [
    worldId,
    revision,
    now,
  ]);
}
