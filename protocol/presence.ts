import { z } from 'zod';
import { text } from './text.js';

/**
 * Ids are opaque, and one that names no user answers `unknown`, but `__proto__` is refused: the
 * answer is a map keyed by the ids, and msgpack decoders (ours included) refuse that key.
 */
export const userIdsSchema = z
  .array(
    z
      .string()
      .min(1)
      .max(64)
      .refine(
        (id) => id !== '__proto__',
        'must not be __proto__, which msgpack clients cannot read as a map key',
      ),
  )
  .min(1)
  .max(200);
export const presenceStatusSchema = z.enum(['online', 'offline', 'unknown']);
export type PresenceStatus = z.infer<typeof presenceStatusSchema>;

/** The raw message may carry surrounding whitespace; the service trims it and applies the 140 cap. */
export const STATUS_MESSAGE_RAW_MAX = 1000;

/** REST shapes of the presence endpoints; the gateway frames carry the same payloads. */
export const heartbeatResponseSchema = z.object({
  status: z.literal('online'),
  ttl_seconds: z.number().int(),
  last_seen_at: z.string(),
});

export const presenceLookupRequestSchema = z.object({ user_ids: userIdsSchema }).strict();
export const presenceLookupResponseSchema = z.object({
  presence: z.record(z.string(), presenceStatusSchema),
});

export const statusMessageRequestSchema = z
  .object({ status_message: text(0, STATUS_MESSAGE_RAW_MAX) })
  .strict();
export const statusMessageResponseSchema = z.object({ status_message: z.string().nullable() });
