import type { Privacy, ProfileUpdate, Profile as ProfileView } from '../../../protocol/profiles.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { withoutBidiControls } from '../../platform/trimmed-text.js';
import {
  DEFAULT_PRIVACY,
  findProfile,
  type Profile,
  type ProfileChanges,
  upsertProfile,
} from './profiles.repository.js';

export type { Privacy };

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
    return view(caller.id, await findProfile(ctx.data, caller.id));
  }

  /**
   * Partial upsert: fields the patch names are written, the others keep their stored value (or
   * their default on the first write). It is one INSERT ... ON CONFLICT (user_id) DO UPDATE that
   * sets only the named columns, so two concurrent first writes both succeed on one row. An empty
   * patch writes nothing and returns the profile as it is.
   */
  async update(ctx: Ctx, patch: ProfileUpdate): Promise<ProfileView> {
    const caller = callerOf(ctx);
    const data: ProfileChanges = {};
    // Other users read the bio: bidirectional controls are removed as from chat (trimmed-text.ts).
    if (patch.bio !== undefined) data.bio = withoutBidiControls(patch.bio);
    if (patch.avatar_asset_id !== undefined) data.avatarAssetId = patch.avatar_asset_id;
    const privacy = patch.privacy ?? {};
    if (privacy.profile_visibility !== undefined) data.profileVisibility = privacy.profile_visibility;
    if (privacy.presence_visibility !== undefined) data.presenceVisibility = privacy.presence_visibility;
    if (privacy.dm_policy !== undefined) data.dmPolicy = privacy.dm_policy;
    if (privacy.favorites_visibility !== undefined) data.favoritesVisibility = privacy.favorites_visibility;
    if (Object.keys(data).length === 0) return this.get(ctx);

    const row = await upsertProfile(ctx.data, caller.id, data, ctx.now());
    // The token outlived its account by a moment: the insert has no user to reference.
    if (!row) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
    return view(caller.id, row);
  }
}
