import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { GroupMessage } from '../../../protocol/groups.js';
import type { WorldMessage } from '../../../protocol/world-chat.js';
import type { EventAudience, EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeOfKey } from '../../platform/cursor.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import { type GroupsApi, groupTopic } from '../groups/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { trimmedBody } from './message-body.js';
import type { Filtered } from './text-filter.js';
import {
  groupMessagesOf,
  insertGroupMessage,
  insertWorldMessage,
  roomMessagesOf,
  type WorldMessageRow,
  worldMessagesOf,
} from './world-chat.repository.js';

export interface WorldChatDeps {
  bus: EventBus;
  worlds: Pick<WorldsApi, 'readable' | 'readableRoom'>;
  groups: Pick<GroupsApi, 'memberOf'>;
  /** Messages per sender and window, over world, room and group chats together. */
  sendLimiter: RateLimiterAbstract;
  filter: (body: string) => Filtered;
}

/** A chat the caller may read: a world's own (roomId null) or one of its rooms'. */
interface Channel {
  worldId: string;
  roomId: string | null;
  /** Who may receive its messages now: only the owner once the world is private. */
  audience: EventAudience | undefined;
}

/**
 * The filter of a chat subscription: a message of a world made private after the join reaches its
 * owner only, on every node, without tracking the joins.
 */
export const chatDeliveryFilter =
  (userId: string) =>
  (audience: EventAudience | undefined): boolean =>
    audience?.visibility !== 'nobody' || audience.subject === userId;

/** Every chat topic starts so; it is also the `stream` of chat events' positions (docs/recovery.md). */
export const CHAT_TOPIC_PREFIX = 'chat:';

/**
 * The bus topic of a world's chat, or of one of its rooms'. Ids are canonical (as the database
 * spells them), so a join and a send under two spellings of one id meet on one topic.
 */
export const chatTopic = (worldId: string, roomId?: string | null): string =>
  roomId == null ? `${CHAT_TOPIC_PREFIX}${worldId}` : `${CHAT_TOPIC_PREFIX}${worldId}:${roomId}`;

const toWorldMessage = (row: WorldMessageRow): WorldMessage => ({
  id: row.id,
  world_id: row.world_id as string,
  room_id: row.room_id,
  sender_id: row.sender_id,
  body: row.body,
  created_at: timeOfKey(row.created_key),
  filtered: row.filtered,
});

const toGroupMessage = (row: WorldMessageRow): GroupMessage => ({
  id: row.id,
  group_id: row.group_id as string,
  sender_id: row.sender_id,
  body: row.body,
  created_at: timeOfKey(row.created_key),
  filtered: row.filtered,
});

type Page = { limit: number; before?: string | undefined };
/** A message stored in a chat, and where its event goes. */
type Stored = { row: WorldMessageRow; topic: string; audience?: EventAudience | undefined };

/**
 * World, room and group chat (docs/chat.md): who may write and read a world's chats is who may
 * read the world; a group's, its members. Every chat takes the same path: body, text filter and
 * rate limit first, then the chat's own store; messages go out as chat.message events on the
 * chat's topic after they were stored.
 */
export class WorldChatService {
  constructor(private readonly deps: WorldChatDeps) {}

  /** Writes to a world's own chat, or one of its rooms'. */
  async send(ctx: Ctx, worldId: string, roomId: string | undefined, rawBody: string): Promise<WorldMessage> {
    return this.deliver(ctx, rawBody, toWorldMessage, async (me, body, filtered) => {
      const channel = await this.channel(ctx, worldId, roomId);
      try {
        const row = await insertWorldMessage(ctx.data, {
          id: newId(),
          worldId: channel.worldId,
          roomId: channel.roomId,
          senderId: me,
          body,
          filtered,
          at: ctx.now(),
        });
        return { row, topic: chatTopic(channel.worldId, channel.roomId), audience: channel.audience };
      } catch (error) {
        // The world or room was deleted after it was read.
        if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION))
          throw new AppError(ErrorCode.NOT_FOUND, 'This chat no longer exists.');
        throw error;
      }
    });
  }

  /** Writes to a group's chat: the membership is checked by the statement that stores the message. */
  async sendToGroup(ctx: Ctx, groupId: string, rawBody: string): Promise<GroupMessage> {
    return this.deliver(ctx, rawBody, toGroupMessage, async (me, body, filtered) => {
      const id = canonicalId(groupId);
      const row = isId(groupId)
        ? await insertGroupMessage(ctx.data, {
            id: newId(),
            groupId: id,
            senderId: me,
            body,
            filtered,
            at: ctx.now(),
          })
        : undefined;
      if (row) return { row, topic: groupTopic(id) };
      await this.deps.groups.memberOf(ctx, groupId);
      // A member a moment ago, removed before the statement ran.
      throw new AppError(ErrorCode.FORBIDDEN, "Only the group's members read and write its chat.");
    });
  }

  /**
   * Checked as a direct message is, cheapest first: the body, the text filter, the sender's rate
   * limit (so a flood of refused sends cannot load the database), then the chat's own rules.
   */
  private async deliver<Message>(
    ctx: Ctx,
    rawBody: string,
    toMessage: (row: WorldMessageRow) => Message,
    store: (me: string, body: string, filtered: boolean) => Promise<Stored>,
  ): Promise<Message> {
    const me = callerOf(ctx).id;
    const { body, filtered } = this.deps.filter(trimmedBody(rawBody));
    await consumeOrThrow(this.deps.sendLimiter, me, 'Too many messages; wait before sending more.');
    const { row, topic, audience } = await store(me, body, filtered);
    const message = toMessage(row);
    await this.deps.bus.publishCommitted(topic, { t: 'chat.message', d: message, audience }, ctx.log);
    return message;
  }

  /** A page of a world's or room's chat, newest first. */
  async history(ctx: Ctx, worldId: string, roomId: string | undefined, page: Page) {
    const before = decodeCursor(page.before, isTimeIdKey, 'before');
    const channel = await this.channel(ctx, worldId, roomId);
    const keyset = { before, limit: page.limit + 1 };
    const rows = channel.roomId
      ? await roomMessagesOf(ctx.data, channel.roomId, keyset)
      : await worldMessagesOf(ctx.data, channel.worldId, keyset);
    return pageFrom(rows, page.limit, toWorldMessage, (row) => [row.created_key, row.id]);
  }

  /** A page of a group's chat, newest first: members only. */
  async groupHistory(ctx: Ctx, groupId: string, page: Page) {
    const before = decodeCursor(page.before, isTimeIdKey, 'before');
    const id = await this.deps.groups.memberOf(ctx, groupId);
    const rows = await groupMessagesOf(ctx.data, id, { before, limit: page.limit + 1 });
    return pageFrom(rows, page.limit, toGroupMessage, (row) => [row.created_key, row.id]);
  }

  /** The group chat `chat.join` subscribes the connection to, once the caller was found a member. */
  async joinableGroup(ctx: Ctx, groupId: string) {
    const id = await this.deps.groups.memberOf(ctx, groupId);
    return { group_id: id, topic: groupTopic(id) };
  }

  /** The chat `chat.join` subscribes the connection to, once the caller was found to read its world. */
  async joinable(ctx: Ctx, worldId: string, roomId: string | undefined) {
    const channel = await this.channel(ctx, worldId, roomId);
    return {
      world_id: channel.worldId,
      room_id: channel.roomId,
      topic: chatTopic(channel.worldId, channel.roomId),
    };
  }

  /** The world (and room) under the canonical ids; 404 when the caller may not read the world. */
  private async channel(ctx: Ctx, worldId: string, roomId: string | undefined): Promise<Channel> {
    const { world, room } =
      roomId === undefined
        ? { world: await this.deps.worlds.readable(ctx, worldId), room: undefined }
        : await this.deps.worlds.readableRoom(ctx, worldId, roomId);
    const audience: EventAudience | undefined =
      world.visibility === 'private' ? { subject: world.ownerId, visibility: 'nobody' } : undefined;
    return { worldId: world.id, roomId: room?.id ?? null, audience };
  }
}
