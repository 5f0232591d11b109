import { z } from 'zod';
import { userDocument } from './documents.js';
import { operation } from './operation.js';
import { text } from './text.js';

/** Who may see a profile or its favorites. */
export const profileVisibilitySchema = z.enum(['public', 'friends', 'private']);
/** Who may see presence or send direct messages. */
export const audienceSchema = z.enum(['everyone', 'friends', 'nobody']);

/** The privacy settings as stored and returned: every key is always present. */
export const privacySchema = z.object({
  profile_visibility: profileVisibilitySchema,
  presence_visibility: audienceSchema,
  dm_policy: audienceSchema,
  favorites_visibility: profileVisibilitySchema,
});
export type Privacy = z.infer<typeof privacySchema>;

/** GET and PUT /api/profile/me */
export const profileSchema = z.object({
  user_id: z.string(),
  bio: z.string(),
  avatar_asset_id: z.string().nullable(),
  privacy: privacySchema,
  /** null for a profile that was never saved. */
  updated_at: z.string().nullable(),
});
export type Profile = z.infer<typeof profileSchema>;

export const BIO_MAX_CHARS = 500;
export const AVATAR_ASSET_ID_MAX_CHARS = 64;

/** PUT /api/profile/me: every field optional; omitted fields keep their stored value. */
export const profileUpdateSchema = z
  .object({
    bio: text(0, BIO_MAX_CHARS).optional(),
    /** null clears the avatar image. */
    avatar_asset_id: text(1, AVATAR_ASSET_ID_MAX_CHARS).nullable().optional(),
    privacy: privacySchema.partial().strict().optional(),
  })
  .strict();
export type ProfileUpdate = z.infer<typeof profileUpdateSchema>;

/** The loadout cap: bytes of the stored document serialized as JSON in UTF-8. */
export const AVATAR_LOADOUT_MAX_BYTES = 16 * 1024;
export const DEFAULT_BASE_BODY = 'base_human_male_01';

/** The document as stored: `is_default` is the server's to decide, so a client's copy is dropped. */
export function storedLoadout(document: Record<string, unknown>): Record<string, unknown> {
  const { is_default: _ignored, ...stored } = document;
  return stored;
}

/**
 * PUT /api/avatar/loadout. Only the envelope is checked: a JSON object with a non-empty string
 * `base_body` and an object `slots`, at most AVATAR_LOADOUT_MAX_BYTES once `is_default` is dropped
 * (so a document read with GET can always be sent back), nested at most MAX_DOCUMENT_DEPTH levels.
 * Other keys and slot contents are the game client's business and are kept exactly as sent.
 */
export const avatarLoadoutInputSchema = userDocument(
  z
    .object({
      base_body: z.string().min(1),
      slots: z.record(z.string(), z.unknown()),
    })
    .catchall(z.unknown()),
  { maxBytes: AVATAR_LOADOUT_MAX_BYTES, stored: storedLoadout },
);
export type AvatarLoadoutInput = z.infer<typeof avatarLoadoutInputSchema>;

/** GET and PUT /api/avatar/loadout: the stored document plus `is_default`. */
export const avatarLoadoutSchema = z
  .object({
    base_body: z.string(),
    slots: z.record(z.string(), z.unknown()),
    /** true only for the server default of a user who never saved a loadout. */
    is_default: z.boolean(),
  })
  .catchall(z.unknown());
export type AvatarLoadout = z.infer<typeof avatarLoadoutSchema>;

export const profileGet = operation('profile.get', {
  tag: 'profile',
  summary: "The signed-in user's profile, or the default profile if it was never saved.",
  rest: { method: 'GET', path: '/api/profile/me' },
  response: profileSchema,
  errors: [401],
});

export const profileUpdate = operation('profile.update', {
  tag: 'profile',
  summary: 'Save any of bio, avatar_asset_id and privacy settings; omitted fields stay as they are.',
  rest: { method: 'PUT', path: '/api/profile/me' },
  request: profileUpdateSchema,
  response: profileSchema,
  errors: [401, 422],
});

export const avatarGetLoadout = operation('avatar.getLoadout', {
  tag: 'avatar',
  summary: "The signed-in user's avatar loadout, or the server default (is_default: true).",
  rest: { method: 'GET', path: '/api/avatar/loadout' },
  response: avatarLoadoutSchema,
  errors: [401],
});

export const avatarPutLoadout = operation('avatar.putLoadout', {
  tag: 'avatar',
  summary:
    'Replace the avatar loadout. Only the envelope is checked: base_body a non-empty string, slots an object, at most 16 KiB of JSON.',
  rest: { method: 'PUT', path: '/api/avatar/loadout' },
  request: avatarLoadoutInputSchema,
  response: avatarLoadoutSchema,
  errors: [401, 422],
});

export const profileOperations = [profileGet, profileUpdate, avatarGetLoadout, avatarPutLoadout] as const;
