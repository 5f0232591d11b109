import { z } from 'zod';
import { operation } from './operation.js';
import { shownAtMost, text } from './text.js';

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
/** The longest status message, in characters as shown (without bidirectional controls, trimmed). */
export const STATUS_MESSAGE_MAX = 140;

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
  .object({ status_message: text(0, STATUS_MESSAGE_RAW_MAX).meta(shownAtMost(STATUS_MESSAGE_MAX)) })
  .strict();
export const statusMessageResponseSchema = z.object({ status_message: z.string().nullable() });

const tag = 'presence';

export const presenceHeartbeat = operation('presence.heartbeat', {
  tag,
  summary: 'Mark the caller online for the presence TTL.',
  frame: true,
  rest: { method: 'POST', path: '/api/presence/heartbeat' },
  response: heartbeatResponseSchema,
  errors: [401],
});

export const presenceQuery = operation('presence.query', {
  tag,
  summary: 'Batch lookup: online, offline or unknown per id, as the caller may see it.',
  frame: true,
  rest: { method: 'POST', path: '/api/presence/presence' },
  request: presenceLookupRequestSchema,
  response: presenceLookupResponseSchema,
  errors: [401, 422],
});

export const presenceStatus = operation('presence.status', {
  tag,
  summary: 'Set the status message (trimmed, at most 140 characters); empty clears it.',
  frame: true,
  rest: { method: 'PUT', path: '/api/presence/status' },
  request: statusMessageRequestSchema,
  response: statusMessageResponseSchema,
  errors: [401, 422],
});

const eventsOnlyOnTheSocket = 'subscriptions deliver presence events, which arrive only on the socket';

export const presenceSubscribe = operation('presence.subscribe', {
  tag,
  summary: "Receive each visible user's presence events; the ack carries their current status.",
  frame: true,
  setup: 'database',
  socketOnly: eventsOnlyOnTheSocket,
  request: presenceLookupRequestSchema,
  response: presenceLookupResponseSchema,
});

export const presenceUnsubscribe = operation('presence.unsubscribe', {
  tag,
  summary: "Stop receiving these users' presence events.",
  frame: true,
  socketOnly: eventsOnlyOnTheSocket,
  request: presenceLookupRequestSchema,
  response: z.object({}),
});

export const presenceOperations = [
  presenceHeartbeat,
  presenceQuery,
  presenceStatus,
  presenceSubscribe,
  presenceUnsubscribe,
] as const;

/** A user's presence changed: pushed to connections subscribed to that user and allowed to see it. */
export interface PresenceEvent {
  user_id: string;
  status: 'online' | 'offline';
  status_message: string | null;
  /** Set when the user went offline. */
  last_seen_at?: string;
}

/** Presence's event, by server frame type. */
export interface PresenceEventPayloads {
  presence: PresenceEvent;
}
