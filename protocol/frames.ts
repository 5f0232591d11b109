import { z } from 'zod';
import type { ChatEventPayloads } from './chat.js';
import type { ChunkEventPayloads } from './chunks.js';
import type { EconomyEventPayloads } from './economy.js';
import type { GameServerEventPayloads } from './gameservers.js';
import type { GroupEventPayloads, GroupMessage } from './groups.js';
import type { NotificationEventPayloads } from './notifications.js';
import { operation } from './operation.js';
import type { PartyEventPayloads, PartyMessage } from './parties.js';
import type { PresenceEventPayloads } from './presence.js';
import type { SocialEventPayloads } from './social.js';
import type { StreamPosition, StreamReset } from './stream-position.js';
import type { WorldMessage } from './world-chat.js';

export type { PresenceEvent } from './presence.js';

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

/** Server frame types: replies, then events pushed to subscribers. */
export const ServerFrameType = {
  PONG: 'pong',
  ACK: 'ack',
  ERROR: 'error',
  PRESENCE: 'presence',
} as const;

/** `ping` is answered by a pong frame (not an ack) carrying the server's clock. */
export const ping = operation('ping', {
  tag: 'gateway',
  summary: 'An application-level round trip; answered by a pong carrying the server time.',
  frame: true,
  socketOnly: 'measures the socket round trip and the clock offset; an HTTP request has its own',
  public: true,
  response: z.object({ ts: z.number() }),
});

/**
 * Event payloads, by server frame type: each domain declares its events beside its operations
 * (`<Domain>EventPayloads` in protocol/<domain>.ts) and this interface gathers them.
 */
export interface EventPayloads
  extends PresenceEventPayloads,
    ChunkEventPayloads,
    SocialEventPayloads,
    ChatEventPayloads,
    GroupEventPayloads,
    EconomyEventPayloads,
    NotificationEventPayloads,
    PartyEventPayloads,
    GameServerEventPayloads {
  /**
   * A world, room or group chat message, to the sockets that joined that chat
   * (protocol/world-chat.ts, protocol/groups.ts), or a party's, to every socket of each member
   * (protocol/parties.ts): declared here as the one frame type several domains send.
   */
  'chat.message': WorldMessage | GroupMessage | PartyMessage;
  /** Events of a recorded stream were lost on their way to this socket: refetch (docs/recovery.md). */
  'stream.reset': StreamReset;
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
  /**
   * On events pushed to the user's own sockets (DMs, read marks, friend events) and on messages of
   * joined chats: their place in their stream, which `stream` names for a chat
   * (`chat:<world_id>[:<room_id>]`) and leaves out for the user's own (docs/recovery.md).
   */
  pos?: StreamPosition & { stream?: string };
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
  /**
   * The user already holds WS_MAX_SOCKETS_PER_USER authenticated sockets (across every node): the
   * auth frame is answered QUOTA_EXCEEDED and the socket closed.
   */
  TOO_MANY_SOCKETS: 4409,
  /** The client kept sending frames far above its rate limit. */
  FLOOD: 4429,
} as const;
