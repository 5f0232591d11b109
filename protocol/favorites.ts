import { z } from 'zod';
import { operation } from './operation.js';

/**
 * A profile's favorite worlds: an ordered set of world ids, replaced as a whole. Only worlds the
 * caller may read can be favorited; an id naming no such world is refused like an unknown one, so
 * a private world's existence stays hidden. Reads leave out worlds that became unreadable since.
 */

/** Entries a PUT may send, counted as sent (before duplicates collapse). */
export const MAX_FAVORITES = 100;

export const favoritesSchema = z.object({
  /** In the order they were favorited: the order of the last PUT. */
  world_ids: z.array(z.string()),
});
export type Favorites = z.infer<typeof favoritesSchema>;

const tag = 'profile';

export const favoritesGet = operation('favorites.get', {
  tag,
  summary: "The signed-in user's favorite worlds, in the order they were favorited.",
  rest: { method: 'GET', path: '/api/profile/me/favorites' },
  response: favoritesSchema,
  errors: [401],
});

export const favoritesPut = operation('favorites.put', {
  tag,
  summary: `Replace the favorite worlds (at most ${MAX_FAVORITES} ids; duplicates collapse, the first one's place is kept). Every id must name a world the caller may read, else 422 naming it and nothing changes.`,
  rest: { method: 'PUT', path: '/api/profile/me/favorites' },
  // Ids are opaque: one that is no uuid is refused by the service like an unknown one.
  request: z.object({ world_ids: z.array(z.string().max(64)).max(MAX_FAVORITES) }).strict(),
  response: favoritesSchema,
  errors: [401, 422],
});

export const favoriteOperations = [favoritesGet, favoritesPut] as const;
