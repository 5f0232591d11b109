import type { Privacy } from '../../../protocol/profiles.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, hasSqlState, SqlState } from '../../platform/db.js';
import { isId, toUuidArray } from '../../platform/ids.js';
import { namedSql } from '../../platform/named-sql.js';

/** The privacy settings of a user who never saved any; the column defaults of 0010 match these. */
export const DEFAULT_PRIVACY: Readonly<Privacy> = Object.freeze({
  profile_visibility: 'public',
  presence_visibility: 'everyone',
  dm_policy: 'everyone',
  favorites_visibility: 'public',
});

/** A saved profile; users who never saved one have none and read the defaults. */
export interface Profile {
  userId: string;
  bio: string;
  avatarAssetId: string | null;
  profileVisibility: Privacy['profile_visibility'];
  presenceVisibility: Privacy['presence_visibility'];
  dmPolicy: Privacy['dm_policy'];
  favoritesVisibility: Privacy['favorites_visibility'];
  updatedAt: Date;
}

const PROFILE_COLUMNS = `user_id as "userId", bio, avatar_asset_id as "avatarAssetId",
  profile_visibility::text as "profileVisibility", presence_visibility::text as "presenceVisibility",
  dm_policy::text as "dmPolicy", favorites_visibility::text as "favoritesVisibility", updated_at as "updatedAt"`;
const FIND_PROFILE_SQL = `select ${PROFILE_COLUMNS} from profiles where user_id = $1`;

export async function findProfile(data: DataAccess, userId: string): Promise<Profile | null> {
  const [row] = await executeBound<Profile>(data, FIND_PROFILE_SQL, [userId]);
  return row ?? null;
}

/** The columns a profile update may name. */
export type ProfileChanges = Partial<Omit<Profile, 'userId' | 'updatedAt'>>;

/**
 * One text for every patch: a column the patch does not name is bound as null and keeps its
 * stored value (its default on the first write). avatar_asset_id may be cleared with null, so
 * whether the patch names it is a parameter of its own; the other columns are never null.
 */
interface UpsertParams {
  userId: string;
  bio: string | null;
  avatarAssetId: string | null;
  setsAvatar: boolean;
  profileVisibility: string | null;
  presenceVisibility: string | null;
  dmPolicy: string | null;
  favoritesVisibility: string | null;
  at: Date;
}
const UPSERT_PROFILE = namedSql<UpsertParams>(
  `insert into profiles as p (user_id, bio, avatar_asset_id, profile_visibility, presence_visibility,
                              dm_policy, favorites_visibility, updated_at)
   values (:userId, coalesce(:bio::text, ''), :avatarAssetId::text,
           coalesce(:profileVisibility::profile_visibility, '${DEFAULT_PRIVACY.profile_visibility}'),
           coalesce(:presenceVisibility::audience, '${DEFAULT_PRIVACY.presence_visibility}'),
           coalesce(:dmPolicy::audience, '${DEFAULT_PRIVACY.dm_policy}'),
           coalesce(:favoritesVisibility::profile_visibility, '${DEFAULT_PRIVACY.favorites_visibility}'), :at)
   on conflict (user_id) do update set
     bio = coalesce(:bio::text, p.bio),
     avatar_asset_id = case when :setsAvatar::boolean then excluded.avatar_asset_id else p.avatar_asset_id end,
     profile_visibility = coalesce(:profileVisibility::profile_visibility, p.profile_visibility),
     presence_visibility = coalesce(:presenceVisibility::audience, p.presence_visibility),
     dm_policy = coalesce(:dmPolicy::audience, p.dm_policy),
     favorites_visibility = coalesce(:favoritesVisibility::profile_visibility, p.favorites_visibility),
     updated_at = excluded.updated_at
   returning ${PROFILE_COLUMNS}`,
);

/**
 * Writes the named columns of the user's profile, creating it with the defaults for the others:
 * one INSERT ... ON CONFLICT (user_id) DO UPDATE, so two concurrent first writes both succeed on
 * one row. Undefined when no account has the id.
 */
export async function upsertProfile(
  data: DataAccess,
  userId: string,
  changes: ProfileChanges,
  at: Date,
): Promise<Profile | undefined> {
  try {
    const [row] = await executeNamed<Profile, UpsertParams>(data, UPSERT_PROFILE, {
      userId,
      bio: changes.bio ?? null,
      avatarAssetId: changes.avatarAssetId ?? null,
      setsAvatar: changes.avatarAssetId !== undefined,
      profileVisibility: changes.profileVisibility ?? null,
      presenceVisibility: changes.presenceVisibility ?? null,
      dmPolicy: changes.dmPolicy ?? null,
      favoritesVisibility: changes.favoritesVisibility ?? null,
      at,
    });
    return row;
  } catch (error) {
    if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) return undefined;
    throw error;
  }
}

/**
 * SQL for statements of other modules that decide in the database (a direct message's guarded
 * insert): the dm_policy, as text, of the user the expression names; the default without a profile.
 */
export const dmPolicySql = (user: string) =>
  `coalesce((select dm_policy::text from profiles where user_id = ${user}), '${DEFAULT_PRIVACY.dm_policy}')`;

/**
 * The privacy settings of each given user in one query, for features that enforce them (presence
 * lookups and events now, direct messages and the public profile view later). Every distinct id
 * is in the result: the stored settings when the user saved a profile, a copy of DEFAULT_PRIVACY
 * otherwise (also for ids that name no user or are not ids at all).
 */
export async function privacyOf(data: DataAccess, userIds: readonly string[]): Promise<Map<string, Privacy>> {
  const result = new Map<string, Privacy>();
  for (const id of userIds) result.set(id, { ...DEFAULT_PRIVACY });
  // Postgres refuses a malformed uuid outright, so such ids are left at the defaults unqueried.
  const queryable = [...result.keys()].filter(isId);
  if (queryable.length === 0) return result;
  // The lean path: every presence query, subscription and direct message reads this.
  const rows = await executeBound<Privacy & { user_id: string }>(
    data,
    `select user_id, profile_visibility, presence_visibility, dm_policy, favorites_visibility
     from profiles where user_id = any($1::uuid[])`,
    [toUuidArray(queryable)],
  );
  const byLowerId = new Map(rows.map(({ user_id, ...privacy }) => [user_id.toLowerCase(), privacy]));
  for (const id of queryable) {
    const privacy = byLowerId.get(id.toLowerCase());
    if (privacy) result.set(id, privacy);
  }
  return result;
}
