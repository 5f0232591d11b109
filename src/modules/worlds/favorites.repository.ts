import type { WorldVisibility } from '../../../protocol/worlds.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/** The SQL of profile favorites: rows carry what `canRead` needs, the service decides. */

export interface FavoriteWorld {
  id: string;
  ownerId: string;
  visibility: WorldVisibility;
}

interface RawFavoriteWorld {
  id: string;
  owner_id: string;
  visibility: WorldVisibility;
}

const toFavoriteWorld = (r: RawFavoriteWorld): FavoriteWorld => ({
  id: r.id,
  ownerId: r.owner_id,
  visibility: r.visibility,
});

/** The worlds among these ids (canonical UUIDs), kept from being deleted until the transaction ends. */
export async function worldsToFavorite(
  data: DataAccess,
  worldIds: readonly string[],
): Promise<FavoriteWorld[]> {
  const rows = await executeBound<RawFavoriteWorld>(
    data,
    'select id, owner_id, visibility::text as visibility from worlds where id = any($1::uuid[]) for key share',
    [worldIds],
  );
  return rows.map(toFavoriteWorld);
}

/**
 * Replaces the user's favorites. The table orders by created_at only, and one transaction has one
 * time, so each entry gets `now` plus its position in microseconds (the column's resolution).
 */
export async function replaceFavorites(
  data: DataAccess,
  userId: string,
  worldIds: readonly string[],
  now: Date,
): Promise<void> {
  await executeBound(data, 'delete from profile_favorites where user_id = $1', [userId]);
  await executeBound(
    data,
    `insert into profile_favorites (user_id, world_id, created_at)
     select $1, v.world_id, $3::timestamptz + v.n * interval '1 microsecond'
     from unnest($2::uuid[]) with ordinality as v(world_id, n)`,
    [userId, worldIds, now],
  );
}

/** The user's favorite worlds in the order they were favorited. */
export async function favoriteWorldsOf(data: DataAccess, userId: string): Promise<FavoriteWorld[]> {
  const rows = await executeBound<RawFavoriteWorld>(
    data,
    `select w.id, w.owner_id, w.visibility::text as visibility
     from profile_favorites f join worlds w on w.id = f.world_id
     where f.user_id = $1 order by f.created_at, f.world_id`,
    [userId],
  );
  return rows.map(toFavoriteWorld);
}
