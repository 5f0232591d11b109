import { type EntityData, ForeignKeyConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Privacy, ProfileUpdate, Profile as ProfileView } from '../../../protocol/profiles.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { executeBound } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { isId, toUuidArray } from '../../platform/ids.js';
import { withoutBidiControls } from '../../platform/trimmed-text.js';
import { type Profile, ProfileSchema } from './profile.entity.js';

export type { Privacy };

/** The privacy settings of a user who never saved any; the column defaults of 0010 match these. */
export const DEFAULT_PRIVACY: Readonly<Privacy> = Object.freeze({
  profile_visibility: 'public',
  presence_visibility: 'everyone',
  dm_policy: 'everyone',
  favorites_visibility: 'public',
});

type PrivacyColumns = Pick<
  Profile,
  'profileVisibility' | 'presenceVisibility' | 'dmPolicy' | 'favoritesVisibility'
>;

function privacyFromRow(row: PrivacyColumns): Privacy {
  return {
    profile_visibility: row.profileVisibility,
    presence_visibility: row.presenceVisibility,
    dm_policy: row.dmPolicy,
    favorites_visibility: row.favoritesVisibility,
  };
}

function view(userId: string, row: Profile | null): ProfileView {
  if (!row) {
    return {
      user_id: userId,
      bio: '',
      avatar_asset_id: null,
      privacy: { ...DEFAULT_PRIVACY },
      updated_at: null,
    };
  }
  return {
    user_id: row.userId,
    bio: row.bio,
    avatar_asset_id: row.avatarAssetId,
    privacy: privacyFromRow(row),
    updated_at: row.updatedAt.toISOString(),
  };
}

export class ProfilesService {
  /** The caller's profile, or the default profile when they never saved one. */
  async get(ctx: Ctx): Promise<ProfileView> {
    const caller = callerOf(ctx);
    return view(caller.id, await ctx.em.findOne(ProfileSchema, { userId: caller.id }));
  }

  /**
   * Partial upsert: fields the patch names are written, the others keep their stored value (or
   * their default on the first write). It is one INSERT ... ON CONFLICT (user_id) DO UPDATE that
   * sets only the named columns, so two concurrent first writes both succeed on one row. An empty
   * patch writes nothing and returns the profile as it is.
   */
  async update(ctx: Ctx, patch: ProfileUpdate): Promise<ProfileView> {
    const caller = callerOf(ctx);
    const data: EntityData<Profile> = {};
    // Other users read the bio: bidirectional controls are removed as from chat (trimmed-text.ts).
    if (patch.bio !== undefined) data.bio = withoutBidiControls(patch.bio);
    if (patch.avatar_asset_id !== undefined) data.avatarAssetId = patch.avatar_asset_id;
    const privacy = patch.privacy ?? {};
    if (privacy.profile_visibility !== undefined) data.profileVisibility = privacy.profile_visibility;
    if (privacy.presence_visibility !== undefined) data.presenceVisibility = privacy.presence_visibility;
    if (privacy.dm_policy !== undefined) data.dmPolicy = privacy.dm_policy;
    if (privacy.favorites_visibility !== undefined) data.favoritesVisibility = privacy.favorites_visibility;
    if (Object.keys(data).length === 0) return this.get(ctx);

    try {
      const row = await ctx.em.upsert(ProfileSchema, { ...data, userId: caller.id, updatedAt: ctx.now() });
      return view(caller.id, row);
    } catch (error) {
      // The token outlived its account by a moment: the insert has no user to reference.
      if (error instanceof ForeignKeyConstraintViolationException) {
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      }
      throw error;
    }
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
export async function privacyOf(
  em: EntityManager,
  userIds: readonly string[],
): Promise<Map<string, Privacy>> {
  const result = new Map<string, Privacy>();
  for (const id of userIds) result.set(id, { ...DEFAULT_PRIVACY });
  // Postgres refuses a malformed uuid outright, so such ids are left at the defaults unqueried.
  const queryable = [...result.keys()].filter(isId);
  if (queryable.length === 0) return result;
  // The lean path: every presence query, subscription and direct message reads this.
  const rows = await executeBound<Privacy & { user_id: string }>(
    em,
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
