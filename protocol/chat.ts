import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { socialUserSchema } from './social.js';
import { shownText } from './text.js';

/**
 * Direct messages (docs/chat.md). A conversation is the pair of the caller and the peer named by
 * `user_id`, created by the first message. Sending to yourself answers 422, to an id that names
 * no user 404, across a block or against the peer's dm_policy 403, over the per-sender rate
 * limit 429 with Retry-After.
 */

/** The longest message, counted in characters after trimming. */
export const MESSAGE_BODY_MAX = 2000;
/** A message body: raw text may carry surrounding whitespace; the service trims it and applies the cap. */
export const messageBodySchema = shownText(MESSAGE_BODY_MAX, { visible: true });

const id = z.string().max(64);

export const messageSchema = z.object({
  id: z.string(),
  conversation_id: z.string(),
  /** Null once the sender's account was deleted. */
  sender_id: z.string().nullable(),
  body: z.string(),
  created_at: z.string(),
  /** The text filter masked words of the body. */
  filtered: z.boolean(),
});
export type Message = z.infer<typeof messageSchema>;

export const conversationSchema = z.object({
  conversation_id: z.string(),
  peer: socialUserSchema,
  last_message: messageSchema.nullable(),
  /** Messages of the peer created after the caller last listed the history. */
  unread_count: z.number().int(),
});
export type Conversation = z.infer<typeof conversationSchema>;

const tag = 'chat';

export const dmSend = operation('dm.send', {
  tag,
  summary:
    'Send a direct message to the user (1-2000 characters after trimming). The text filter masks disallowed words and sets filtered, or refuses the message with 422 MESSAGE_REJECTED when so configured.',
  frame: true,
  rest: { method: 'POST', path: '/api/chat/dm/:user_id/messages', status: 201 },
  request: z.object({ user_id: id, body: messageBodySchema }).strict(),
  response: messageSchema,
  errors: [401, 403, 404, 422, 429],
});

export const dmHistory = operation('dm.history', {
  tag,
  summary:
    "The conversation with the user, newest first; `before` is the previous page's next_cursor. Marks the conversation read for the caller.",
  rest: { method: 'GET', path: '/api/chat/dm/:user_id/messages' },
  request: z.object({ user_id: id, limit: listQuery.limit, before: listQuery.cursor }).strict(),
  response: pageOf(messageSchema),
  errors: [401, 404, 422],
});

export const dmConversations = operation('dm.conversations', {
  tag,
  summary: "The caller's conversations, most recent activity first, with the last message and unread count.",
  rest: { method: 'GET', path: '/api/chat/dm/conversations' },
  request: z.object(listQuery).strict(),
  response: pageOf(conversationSchema),
  errors: [401, 422],
});

export const chatOperations = [dmSend, dmHistory, dmConversations] as const;

/** `dm.read`: the peer listed the conversation's history, so has read it up to `last_read_at`. */
export interface DmReadEvent {
  conversation_id: string;
  user_id: string;
  last_read_at: string;
}

/** The direct-message events, by server frame type: to the peer's sockets and the sender's. */
export interface ChatEventPayloads {
  'dm.message': Message;
  'dm.read': DmReadEvent;
}
