import type { Favorites } from '../../../protocol/favorites.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { UsersApi } from '../users/index.js';
import { favoriteWorldsOf, replaceFavorites, worldsToFavorite } from './favorites.repository.js';
import { canRead } from './worlds.service.js';

/**
 * Refuses the entries at these indexes. Unknown ids and ids of worlds the caller may not read get
 * the same message, so a private world's existence stays hidden. The paths carry the `body.`
 * prefix of schema errors because these operations are REST only: a client sees one spelling.
 */
const notFavoritable = (indexes: readonly number[]) =>
  new AppError(ErrorCode.VALIDATION_FAILED, 'Some world ids name no world you can read.', {
    errors: indexes.map((index) => ({ path: `body.world_ids.${index}`, message: 'names no world' })),
  });

/** A profile's favorite worlds: an ordered set of worlds the user may read (docs/worlds.md). */
export class FavoritesService {
  /** `lockAccount` makes one user's replaces take turns (two at once would merge their sets). */
  constructor(private readonly users: Pick<UsersApi, 'lockAccount'>) {}

  /** Worlds that became unreadable since they were favorited are left out, not deleted. */
  async get(ctx: Ctx): Promise<Favorites> {
    const caller = callerOf(ctx);
    const worlds = await favoriteWorldsOf(ctx.data, caller.id);
    return { world_ids: worlds.filter((world) => canRead(world, caller.id)).map((world) => world.id) };
  }

  /** Replaces the set in one transaction; one refused id refuses the whole request. */
  async replace(ctx: Ctx, worldIds: readonly string[]): Promise<Favorites> {
    const caller = callerOf(ctx);
    const now = ctx.now();
    // Canonical first, so an id sent in two letter cases collapses like any other duplicate.
    const ids = worldIds.map(canonicalId);
    const unique = [...new Set(ids)];
    await transaction(ctx.data, async (tx) => {
      if (!(await this.users.lockAccount(tx, caller.id)))
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      const worlds = await worldsToFavorite(tx, unique.filter(isId));
      const readable = new Set(worlds.filter((world) => canRead(world, caller.id)).map((world) => world.id));
      const refused = ids.flatMap((id, index) => (readable.has(id) ? [] : [index]));
      if (refused.length > 0) throw notFavoritable(refused);
      await replaceFavorites(tx, caller.id, unique, now);
    });
    return { world_ids: unique };
  }
}
