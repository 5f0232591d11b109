import type { WorldVisibility } from '../../../protocol/worlds.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, lockNamed } from '../../platform/db.js';
import type { NameSearch } from '../../platform/name-search.js';
import { namedSql } from '../../platform/named-sql.js';
import { usernameSql } from '../users/index.js';

/**
 * The SQL of worlds and rooms. Revision ids are bigint: the drivers hand them back as text or
 * number, so rows are normalised here and services see numbers (ids stay far below 2^53).
 */

export interface WorldRow {
  id: string;
  ownerId: string;
  name: string;
  description: string;
  visibility: WorldVisibility;
  contentRevision: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface RoomRow {
  id: string;
  worldId: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

interface RawWorld {
  id: string;
  owner_id: string;
  name: string;
  description: string;
  visibility: WorldVisibility;
  content_revision: string | number;
  created_at: Date | string;
  updated_at: Date | string;
}

interface RawRoom {
  id: string;
  world_id: string;
  name: string;
  created_at: Date | string;
  updated_at: Date | string;
}

const WORLD_COLUMNS =
  'id, owner_id, name, description, visibility::text as visibility, content_revision, created_at, updated_at';
const ROOM_COLUMNS = 'id, world_id, name, created_at, updated_at';

const toWorld = (r: RawWorld): WorldRow => ({
  id: r.id,
  ownerId: r.owner_id,
  name: r.name,
  description: r.description,
  visibility: r.visibility,
  contentRevision: Number(r.content_revision),
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

const toRoom = (r: RawRoom): RoomRow => ({
  id: r.id,
  worldId: r.world_id,
  name: r.name,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

/**
 * SQL fragment for other modules' statements (docs/modules.md, "Tables: one owner each"): the
 * owner of the world `worldIdSql` names, null when there is no such world.
 */
export const worldOwnerSql = (worldIdSql: string) => `(select owner_id from worlds where id = ${worldIdSql})`;

type NewWorld = Pick<WorldRow, 'id' | 'ownerId' | 'name' | 'description' | 'visibility' | 'createdAt'>;

const INSERT_WORLD = namedSql<NewWorld>(
  `insert into worlds (id, owner_id, name, description, visibility, created_at, updated_at)
   values (:id, :ownerId, :name, :description, :visibility::world_visibility, :createdAt, :createdAt)
   returning ${WORLD_COLUMNS}`,
);

export async function insertWorld(
  data: DataAccess,
  world: Omit<WorldRow, 'contentRevision'>,
): Promise<WorldRow> {
  const [row] = await executeNamed<RawWorld, NewWorld>(data, INSERT_WORLD, world);
  return toWorld(row as RawWorld);
}

export async function findWorld(data: DataAccess, worldId: string): Promise<WorldRow | undefined> {
  const [row] = await executeBound<RawWorld>(data, `select ${WORLD_COLUMNS} from worlds where id = $1`, [
    worldId,
  ]);
  return row && toWorld(row);
}

/** Sets the fields given (null leaves one as it is) and returns the world, or undefined when it is gone. */
export async function updateWorld(
  data: DataAccess,
  worldId: string,
  patch: { name: string | null; description: string | null; visibility: WorldVisibility | null },
  now: Date,
): Promise<WorldRow | undefined> {
  const [row] = await executeBound<RawWorld>(
    data,
    `update worlds set name = coalesce($2, name), description = coalesce($3, description),
       visibility = coalesce($4::world_visibility, visibility), updated_at = $5
     where id = $1 returning ${WORLD_COLUMNS}`,
    [worldId, patch.name, patch.description, patch.visibility, now],
  );
  return row && toWorld(row);
}

export async function deleteWorld(data: DataAccess, worldId: string): Promise<void> {
  await executeBound(data, 'delete from worlds where id = $1', [worldId]);
}

export async function insertRoom(data: DataAccess, room: RoomRow): Promise<RoomRow> {
  const [row] = await executeBound<RawRoom>(
    data,
    `insert into rooms (id, world_id, name, created_at, updated_at) values ($1, $2, $3, $4, $4) returning ${ROOM_COLUMNS}`,
    [room.id, room.worldId, room.name, room.createdAt],
  );
  return toRoom(row as RawRoom);
}

/** Rooms of a world after `afterId` (ids are UUID v7, so this is creation order), at most `limit`. */
export async function roomsOf(
  data: DataAccess,
  worldId: string,
  options: { afterId?: string; limit: number },
): Promise<RoomRow[]> {
  const rows = await executeBound<RawRoom>(
    data,
    `select ${ROOM_COLUMNS} from rooms where world_id = $1 and ($2::uuid is null or id > $2::uuid) order by id limit $3`,
    [worldId, options.afterId ?? null, options.limit],
  );
  return rows.map(toRoom);
}

/**
 * Makes a user's world creations take turns (a transaction-scoped advisory lock on the owner), so
 * the count read after it and the insert are one step and the quota holds under concurrency. The
 * count must be a statement of its own after this one: a statement reads as of its start.
 */
export async function lockOwnerWorlds(data: DataAccess, ownerId: string): Promise<void> {
  await lockNamed(data, `worlds:owner:${ownerId}`);
}

export async function countWorldsOf(data: DataAccess, ownerId: string): Promise<number> {
  const [row] = await executeBound<{ n: string | number }>(
    data,
    'select count(*) as n from worlds where owner_id = $1',
    [ownerId],
  );
  return Number(row?.n ?? 0);
}

export async function countRooms(data: DataAccess, worldId: string): Promise<number> {
  const [row] = await executeBound<{ n: string | number }>(
    data,
    'select count(*) as n from rooms where world_id = $1',
    [worldId],
  );
  return Number(row?.n ?? 0);
}

export async function findRoom(
  data: DataAccess,
  worldId: string,
  roomId: string,
): Promise<RoomRow | undefined> {
  const [row] = await executeBound<RawRoom>(
    data,
    `select ${ROOM_COLUMNS} from rooms where id = $1 and world_id = $2`,
    [roomId, worldId],
  );
  return row && toRoom(row);
}

export async function renameRoom(
  data: DataAccess,
  roomId: string,
  name: string,
  now: Date,
): Promise<RoomRow | undefined> {
  const [row] = await executeBound<RawRoom>(
    data,
    `update rooms set name = $2, updated_at = $3 where id = $1 returning ${ROOM_COLUMNS}`,
    [roomId, name, now],
  );
  return row && toRoom(row);
}

/**
 * Deletes a room (its chunks and revisions go with it) and records that as a content commit: the
 * content revision becomes the largest revision id left, read from the (world_id, id desc) index,
 * and the world's stored bytes give back the payloads of every revision of the room, its live
 * chunks' and their history's. The second statement runs after the first, so it reads the
 * revisions that are left.
 */
export async function deleteRoom(
  data: DataAccess,
  worldId: string,
  roomId: string,
  now: Date,
): Promise<{ seq: number; contentRevision: number }> {
  const [freed] = await executeBound<{ bytes: string | number }>(
    data,
    `with freed as (
       select coalesce(sum(octet_length(payload)), 0) as bytes from chunk_revisions where room_id = $1
     ), gone as (delete from rooms where id = $1)
     select bytes from freed`,
    [roomId],
  );
  const [row] = await executeBound<{ stream_seq: string | number; content_revision: string | number }>(
    data,
    `update worlds set updated_at = $2, stream_seq = stream_seq + 1, content_revision = coalesce(
       (select id from chunk_revisions where world_id = $1 order by id desc limit 1), 0),
       stored_bytes = stored_bytes - $3
     where id = $1 returning stream_seq, content_revision`,
    [worldId, now, Number(freed?.bytes ?? 0)],
  );
  return { seq: Number(row?.stream_seq), contentRevision: Number(row?.content_revision) };
}

/** Where a world's live stream starts: its stream sequence number and content revision. */
export async function streamPosition(
  data: DataAccess,
  worldId: string,
): Promise<{ seq: number; contentRevision: number }> {
  const [row] = await executeBound<{ stream_seq: string | number; content_revision: string | number }>(
    data,
    'select stream_seq, content_revision from worlds where id = $1',
    [worldId],
  );
  return { seq: Number(row?.stream_seq ?? 0), contentRevision: Number(row?.content_revision ?? 0) };
}

/** Locks the world's row for the rest of the transaction: writes to one world take turns. */
export async function lockWorld(data: DataAccess, worldId: string): Promise<WorldRow | undefined> {
  const [row] = await executeBound<RawWorld>(
    data,
    `select ${WORLD_COLUMNS} from worlds where id = $1 for update`,
    [worldId],
  );
  return row && toWorld(row);
}

export interface AdminWorldFilter {
  /** One world by its exact (canonical) id. */
  id?: string | undefined;
  /** A name search (src/platform/name-search.ts). */
  search?: NameSearch | undefined;
  visibility?: WorldVisibility | undefined;
  ownerId?: string | undefined;
}

/**
 * A page of every world, newest first (ids are UUID v7), for the administration list. The text
 * depends only on which filters are present (a few fixed texts, each prepared once), so a present
 * filter is an index condition (migration 0025) rather than a `$n is null or ...`; a first page
 * compares with the largest id there is, keeping the keyset an index bound.
 */
export async function adminWorldsPage(
  data: DataAccess,
  filter: AdminWorldFilter,
  page: { beforeId: string | undefined; limit: number },
): Promise<(WorldRow & { ownerUsername: string })[]> {
  const conditions = [`id < coalesce($2::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff')`];
  const params: unknown[] = [page.limit, page.beforeId ?? null];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.id !== undefined) conditions.push(`id = ${param(filter.id)}::uuid`);
  if (filter.visibility !== undefined)
    conditions.push(`visibility = ${param(filter.visibility)}::world_visibility`);
  if (filter.ownerId !== undefined) conditions.push(`owner_id = ${param(filter.ownerId)}::uuid`);
  if (filter.search !== undefined) {
    const prefix = `lower(name) collate "C" like ${param(filter.search.prefix)}`;
    conditions.push(
      filter.search.words === null
        ? prefix
        : `(${prefix} or to_tsvector('simple', name) @@ to_tsquery('simple', ${param(filter.search.words)}))`,
    );
  }
  const rows = await executeBound<RawWorld & { owner_username: string }>(
    data,
    `select ${WORLD_COLUMNS}, ${usernameSql('owner_id')} as owner_username from worlds
     where ${conditions.join(' and ')} order by id desc limit $1`,
    params,
  );
  return rows.map((row) => ({ ...toWorld(row), ownerUsername: row.owner_username }));
}
