import { z } from 'zod';
import { presenceStatusSchema, userIdsSchema } from './frames.js';

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

export const statusMessageRequestSchema = z.object({ status_message: z.string().max(1000) }).strict();
export const statusMessageResponseSchema = z.object({ status_message: z.string().nullable() });
