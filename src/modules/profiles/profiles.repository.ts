import { type EntityData, ForeignKeyConstraintViolationException } from '@mikro-orm/core';
import type { Privacy } from '../../../protocol/profiles.js';
import { type DataAccess, entityManagerOf } from '../../platform/data-handle.js';
import { executeBound } from '../../platform/db.js';
import { isId, toUuidArray } from '../../platform/ids.js';
import { type Profile, ProfileSchema } from './profile.entity.js';

/** The privacy settings of a user who never saved any; the column defaults of 0010 match these. */
export const DEFAULT_PRIVACY: Readonly<Privacy> = Object.freeze({
  profile_visibility: 'public',
  presence_visibility: 'everyone',
  dm_policy: 'everyone',
  favorites_visibility: 'public',
});

export function findProfile(data: DataAccess, userId: string): Promise<Profile | null> {
  return entityManagerOf(data).findOne(ProfileSchema, { userId });
}

/** The columns a profile update may name. */
export type ProfileChanges = EntityData<Profile>;

/**
 * Writes the named columns of the user's profile, creating it with the defaults for the others:
 * one INSERT ... ON CONFLICT (user_id) DO UPDATE. Undefined when no account has the id.
 */
export async function upsertProfile(
  data: DataAccess,
  userId: string,
  changes: ProfileChanges,
  at: Date,
): Promise<Profile | undefined> {
  try {
    return await entityManagerOf(data).upsert(ProfileSchema, { ...changes, userId, updatedAt: at });
  } catch (error) {
    if (error instanceof ForeignKeyConstraintViolationException) return undefined;
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
