import { z } from 'zod';
import type { DmReadEvent, Message } from './chat.js';
import type {
  ChunksCommitEvent,
  ChunksResyncEvent,
  ChunksRoomDeletedEvent,
  ChunksStreamEndedEvent,
} from './chunks.js';
import type { EconomyBalanceEvent, EconomyPayoutEvent, EconomySaleEvent } from './economy.js';
import type {
  GroupDeletedEvent,
  GroupMemberEvent,
  GroupMemberGoneEvent,
  GroupMessage,
  GroupOwnerEvent,
  GroupRequestEvent,
  GroupRoleEvent,
  GroupUpdatedEvent,
} from './groups.js';
import { operation } from './operation.js';
import type { ChunksPage } from './room-content.js';
import type { FriendChangeEvent, FriendRequestEvent } from './social.js';
import type { StreamPosition } from './stream-position.js';
import type { WorldMessage } from './world-chat.js';

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
  'chunks.page': ChunksPage;
  'chunks.commit': ChunksCommitEvent;
  'chunks.resync': ChunksResyncEvent;
  'chunks.room_deleted': ChunksRoomDeletedEvent;
  'chunks.stream_ended': ChunksStreamEndedEvent;
  /** Sent to each of a user's sockets, without subscribing (protocol/social.ts). */
  'social.friend_request': FriendRequestEvent;
  'social.friend_accepted': FriendChangeEvent;
  'social.friend_removed': FriendChangeEvent;
  /** A direct message, to the peer's sockets and the sender's (protocol/chat.ts). */
  'dm.message': Message;
  'dm.read': DmReadEvent;
  /** A world, room or group chat message, to the sockets that joined that chat (protocol/world-chat.ts, protocol/groups.ts). */
  'chat.message': WorldMessage | GroupMessage;
  /**
   * Roster changes of a group, to the sockets that joined its chat and to the affected user's own
   * sockets (once: a socket of that user that joined the chat gets it as a user event); join
   * requests made, declined and withdrawn go to the requester and the group's owner and admins
   * instead (protocol/groups.ts). An approval is a member_joined whose `by` is the approver.
   */
  'group.member_joined': GroupMemberEvent;
  'group.member_left': GroupMemberGoneEvent;
  'group.member_kicked': GroupMemberGoneEvent;
  'group.role_changed': GroupRoleEvent;
  'group.ownership_changed': GroupOwnerEvent;
  'group.join_requested': GroupRequestEvent;
  'group.request_declined': GroupRequestEvent;
  /** The requester withdrew their request (`by` is the requester). */
  'group.request_withdrawn': GroupRequestEvent;
  'group.updated': GroupUpdatedEvent;
  'group.deleted': GroupDeletedEvent;
  /** A balance of the user's changed (protocol/economy.ts); sales and payout moves on the user's topic. */
  'economy.balance': EconomyBalanceEvent;
  'economy.sale': EconomySaleEvent;
  'economy.payout': EconomyPayoutEvent;
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
