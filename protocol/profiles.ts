import { z } from 'zod';

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

/**
 * Strings end up in Postgres text or jsonb, which cannot hold U+0000 and (in jsonb) lone UTF-16
 * surrogates; the pg driver would silently replace the latter. Refusing both keeps what is read
 * back identical to what was written.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}

/**
 * Lengths count characters (Unicode code points), as Postgres char_length and JSON Schema's
 * maxLength do, not UTF-16 units: an emoji counts once.
 */
function text(min: number, max: number) {
  return z
    .string()
    .refine(isStorableText, 'must not contain U+0000 or unpaired surrogates')
    .refine(
      (value) => {
        const length = [...value].length;
        return length >= min && length <= max;
      },
      `must be ${min === 0 ? `at most ${max}` : `${min}-${max}`} characters`,
    )
    .meta({ ...(min > 0 ? { minLength: min } : {}), maxLength: max });
}

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

/** Where the document (or a key in it) holds a string Postgres jsonb cannot store, if anywhere. */
function unstorablePath(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = unstorablePath(item, [...path, index]);
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (!isStorableText(key)) return path;
      const found = unstorablePath(item, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

/** The document as stored: `is_default` is the server's to decide, so a client's copy is dropped. */
export function storedLoadout(document: AvatarLoadoutInput): Record<string, unknown> {
  const { is_default: _ignored, ...stored } = document;
  return stored;
}

const utf8 = new TextEncoder();

/** Bytes of the document's JSON serialization in UTF-8, as the size cap counts them. */
export function loadoutBytes(document: Record<string, unknown>): number {
  return utf8.encode(JSON.stringify(document)).byteLength;
}

/**
 * PUT /api/avatar/loadout. Only the envelope is checked: a JSON object with a non-empty string
 * `base_body` and an object `slots`, at most AVATAR_LOADOUT_MAX_BYTES once `is_default` is dropped
 * (so a document read with GET can always be sent back). Other keys and slot contents are the
 * game client's business and are kept as they are.
 */
export const avatarLoadoutInputSchema = z
  .object({
    base_body: z.string().min(1),
    slots: z.record(z.string(), z.unknown()),
  })
  .catchall(z.unknown())
  .superRefine((document, check) => {
    const bytes = loadoutBytes(storedLoadout(document));
    if (bytes > AVATAR_LOADOUT_MAX_BYTES) {
      check.addIssue({
        code: 'custom',
        path: [],
        message: `the document is ${bytes} bytes as JSON; at most ${AVATAR_LOADOUT_MAX_BYTES} are allowed`,
      });
      return;
    }
    const path = unstorablePath(document, []);
    if (path) {
      check.addIssue({ code: 'custom', path, message: 'must not contain U+0000 or unpaired surrogates' });
    }
  });
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
