import { z } from 'zod';
import { authFrameSchema } from './auth.js';
import { type PresenceStatus, presenceLookupRequestSchema, statusMessageRequestSchema } from './presence.js';

export type { PresenceStatus };

/**
 * The frame envelope. Every frame is one binary WebSocket message holding a msgpack map:
 *   client -> server: { t: <type>, id?: <request id>, d?: <payload> }
 *   server -> client: { t: 'ack' | 'error' | 'pong' | <event type>, id?: <request id>, ... }
 * `id` is chosen by the client (an unsigned 32-bit integer) and echoed on the ack or error that
 * answers the frame, so a client can match replies to requests.
 */
export const REQUEST_ID_MAX = 2 ** 32 - 1;

export const clientFrameSchema = z.object({
  t: z.string().min(1).max(64),
  id: z.number().int().min(0).max(REQUEST_ID_MAX).optional(),
  d: z.unknown().optional(),
});
export type ClientFrame = z.infer<typeof clientFrameSchema>;

/** Client frame types. */
export const ClientFrameType = {
  PING: 'ping',
  AUTH: 'auth',
  PRESENCE_HEARTBEAT: 'presence.heartbeat',
  PRESENCE_QUERY: 'presence.query',
  PRESENCE_SUBSCRIBE: 'presence.subscribe',
  PRESENCE_UNSUBSCRIBE: 'presence.unsubscribe',
  PRESENCE_STATUS: 'presence.status',
} as const;

/** Server frame types: replies, then events pushed to subscribers. */
export const ServerFrameType = {
  PONG: 'pong',
  ACK: 'ack',
  ERROR: 'error',
  PRESENCE: 'presence',
} as const;

const noPayload = z.undefined().or(z.object({}).strict());

/** The payload schema (`d`) of every client frame, by type. */
export const clientPayloadSchemas = {
  [ClientFrameType.PING]: noPayload,
  [ClientFrameType.AUTH]: authFrameSchema,
  [ClientFrameType.PRESENCE_HEARTBEAT]: noPayload,
  [ClientFrameType.PRESENCE_QUERY]: presenceLookupRequestSchema,
  [ClientFrameType.PRESENCE_SUBSCRIBE]: presenceLookupRequestSchema,
  [ClientFrameType.PRESENCE_UNSUBSCRIBE]: presenceLookupRequestSchema,
  [ClientFrameType.PRESENCE_STATUS]: statusMessageRequestSchema,
} as const;

export type ClientFrameTypeName = keyof typeof clientPayloadSchemas;
export type ClientPayload<T extends ClientFrameTypeName> = z.infer<(typeof clientPayloadSchemas)[T]>;

/** Ack payloads, by client frame type. */
export interface AckPayloads {
  ping: never;
  auth: { user_id: string; roles: string[] };
  'presence.heartbeat': { status: 'online'; ttl_seconds: number; last_seen_at: string };
  'presence.query': { presence: Record<string, PresenceStatus> };
  'presence.subscribe': { presence: Record<string, PresenceStatus> };
  'presence.unsubscribe': Record<string, never>;
  'presence.status': { status_message: string | null };
}

/** A user's presence changed: pushed to connections subscribed to that user and allowed to see it. */
export interface PresenceEvent {
  user_id: string;
  status: 'online' | 'offline';
  status_message: string | null;
  /** Set when the user went offline. */
  last_seen_at?: string;
}

/** Event payloads, by server frame type. */
export interface EventPayloads {
  presence: PresenceEvent;
}

export interface PongFrame {
  t: 'pong';
  id?: number;
  /** Server time in milliseconds since the epoch, for clock-offset estimates. */
  ts: number;
}

export interface AckFrame<T = unknown> {
  t: 'ack';
  id: number;
  d?: T;
}

export interface ErrorFrame {
  t: 'error';
  /** The request id of the frame this answers, when it had one. */
  id?: number;
  code: string;
  message: string;
  errors?: { path: string; message: string }[];
  retry_after?: number;
}

export interface EventFrame<T extends keyof EventPayloads = keyof EventPayloads> {
  t: T;
  d: EventPayloads[T];
}

export type ServerFrame = PongFrame | AckFrame | ErrorFrame | EventFrame;

/** WebSocket close codes the gateway uses. */
export const CloseCode = {
  /** The server is shutting down; reconnect to another node or later. */
  GOING_AWAY: 1001,
  /** No valid auth frame arrived within the authentication deadline. */
  AUTH_TIMEOUT: 4401,
  /** The session ended: its access token expired without a fresh auth frame, or it was revoked (logout). */
  SESSION_ENDED: 4403,
  /** The client read too slowly: more than the allowed bytes were waiting to be sent to it. */
  SLOW_CONSUMER: 4408,
  /** The client kept sending frames far above its rate limit. */
  FLOOD: 4429,
} as const;
