import { z } from 'zod';
import { messageBodySchema } from './chat.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { streamPositionSchema } from './stream-position.js';

/**
 * World and room chat (docs/chat.md): a world's own channel, and one channel per room. The world's
 * visibility decides who may read and write (private worlds: their owner only); a world the caller
 * may not read, an unknown one and a room of another world all answer 404. Bodies, the text
 * filter, the per-sender rate limit and history pages follow the rules of direct messages.
 */

const id = z.string().max(64);

export const worldMessageSchema = z.object({
  id: z.string(),
  world_id: z.string(),
  /** Null for the world's own channel. */
  room_id: z.string().nullable(),
  /** Null once the sender's account was deleted. */
  sender_id: z.string().nullable(),
  body: z.string(),
  created_at: z.string(),
  /** The text filter masked words of the body. */
  filtered: z.boolean(),
});
export type WorldMessage = z.infer<typeof worldMessageSchema>;

const tag = 'chat';
const WORLD_MESSAGES = '/api/worlds/:world_id/messages';
const ROOM_MESSAGES = '/api/worlds/:world_id/rooms/:room_id/messages';
const body = messageBodySchema;
const sendErrors = [401, 404, 422, 429];

export const chatSendToWorld = operation('chat.sendToWorld', {
  tag,
  summary:
    "Write to the world's chat (1-2000 characters after trimming); its chat.message event reaches the sockets that joined the world's chat.",
  rest: { method: 'POST', path: WORLD_MESSAGES, status: 201 },
  request: z.object({ world_id: id, body }).strict(),
  response: worldMessageSchema,
  errors: sendErrors,
});

export const chatSendToRoom = operation('chat.sendToRoom', {
  tag,
  summary:
    "Write to the chat of one of the world's rooms (1-2000 characters after trimming); its chat.message event reaches the sockets that joined the room's chat.",
  rest: { method: 'POST', path: ROOM_MESSAGES, status: 201 },
  request: z.object({ world_id: id, room_id: id, body }).strict(),
  response: worldMessageSchema,
  errors: sendErrors,
});

export const chatWorldHistory = operation('chat.worldHistory', {
  tag,
  summary:
    "The world's chat (without its rooms' messages), newest first; `before` is the previous page's next_cursor.",
  rest: { method: 'GET', path: WORLD_MESSAGES },
  request: z.object({ world_id: id, limit: listQuery.limit, before: listQuery.cursor }).strict(),
  response: pageOf(worldMessageSchema),
  errors: [401, 404, 422],
});

export const chatRoomHistory = operation('chat.roomHistory', {
  tag,
  summary: "The room's chat, newest first; `before` is the previous page's next_cursor.",
  rest: { method: 'GET', path: ROOM_MESSAGES },
  request: z.object({ world_id: id, room_id: id, limit: listQuery.limit, before: listQuery.cursor }).strict(),
  response: pageOf(worldMessageSchema),
  errors: [401, 404, 422],
});

/** The channel of a frame: the world's own without room_id, else the room's. */
const channel = { world_id: id, room_id: id.optional() };
/**
 * The chat a socket joins or leaves: a world's own (world_id), a room's (world_id and room_id), or
 * a group's (group_id; members only, docs/groups.md). One object rather than a union, so a bad
 * field is named in the 422 rather than the whole payload.
 */
const chatNames = { world_id: id.optional(), room_id: id.optional(), group_id: id.optional() };
type ChatNames = {
  world_id?: string | undefined;
  room_id?: string | undefined;
  group_id?: string | undefined;
};

function namesOneChat(value: ChatNames, ctx: z.RefinementCtx): void {
  if ((value.world_id === undefined) === (value.group_id === undefined))
    ctx.addIssue({ code: 'custom', path: ['world_id'], message: 'name either world_id or group_id' });
  else if (value.group_id !== undefined && value.room_id !== undefined)
    ctx.addIssue({ code: 'custom', path: ['room_id'], message: 'a group chat has no rooms' });
}

/** The chat a joinable payload names, once its refinement passed. */
export function joinedChat(
  input: ChatNames,
): { group_id: string } | { world_id: string; room_id: string | undefined } {
  return input.group_id !== undefined
    ? { group_id: input.group_id }
    : { world_id: input.world_id ?? '', room_id: input.room_id };
}

export const chatSend = operation('chat.send', {
  tag,
  summary:
    "Write to the world's chat, or to one room's with room_id; the twin of POST /api/worlds/{world_id}/messages and of POST /api/worlds/{world_id}/rooms/{room_id}/messages.",
  frame: true,
  restRoute: [
    { method: 'POST', path: WORLD_MESSAGES, operationId: chatSendToWorld.name },
    { method: 'POST', path: ROOM_MESSAGES, operationId: chatSendToRoom.name },
  ],
  request: z.object({ ...channel, body }).strict(),
  response: worldMessageSchema,
});

const eventsOnlyOnTheSocket =
  'joining a chat delivers its chat.message events, which only the socket can; REST readers page the history';

const recover = streamPositionSchema.optional();
/** Where the chat's stream stands for this socket (as the auth ack's `position`); absent when already joined. */
const joinedAt = {
  position: streamPositionSchema.optional(),
  /** Answers `recover`: whether every missed message was sent before this ack. */
  recovered: z.boolean().optional(),
};

export const chatJoin = operation('chat.join', {
  tag,
  summary:
    "Receive the chat.message events of the world's chat, of one room's with room_id, or of a group's with group_id (members only; its roster events too), until chat.leave, the end of the connection or, for a group, the end of the membership. With `recover` (the `pos` of the last event of this chat an earlier connection received), the events missed since come first (docs/recovery.md).",
  frame: true,
  setup: 'database',
  socketOnly: eventsOnlyOnTheSocket,
  request: z
    .object({ ...chatNames, recover })
    .strict()
    .superRefine(namesOneChat),
  response: z.union([
    z.object({ world_id: z.string(), room_id: z.string().nullable(), ...joinedAt }),
    z.object({ group_id: z.string(), ...joinedAt }),
  ]),
});

export const chatLeave = operation('chat.leave', {
  tag,
  summary: "Stop receiving the world's chat (without room_id), one room's, or a group's (group_id).",
  frame: true,
  socketOnly: eventsOnlyOnTheSocket,
  request: z.object(chatNames).strict().superRefine(namesOneChat),
  response: z.object({}),
});

export const worldChatOperations = [
  chatSendToWorld,
  chatSendToRoom,
  chatWorldHistory,
  chatRoomHistory,
  chatSend,
  chatJoin,
  chatLeave,
] as const;
