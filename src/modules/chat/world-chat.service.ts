import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { WorldMessage } from '../../../protocol/world-chat.js';
import type { EventAudience, EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { WorldsApi } from '../worlds/index.js';
import { trimmedBody } from './message-body.js';
import type { Filtered } from './text-filter.js';
import {
  insertWorldMessage,
  roomMessagesOf,
  type WorldMessageRow,
  worldMessagesOf,
} from './world-chat.repository.js';

export interface WorldChatDeps {
  bus: EventBus;
  worlds: Pick<WorldsApi, 'readable' | 'readableRoom'>;
  /** Messages per sender and window, over world and room chats together. */
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

const toMessage = (row: WorldMessageRow): WorldMessage => ({
  id: row.id,
  world_id: row.world_id,
  room_id: row.room_id,
  sender_id: row.sender_id,
  body: row.body,
  created_at: new Date(row.created_at).toISOString(),
  filtered: row.filtered,
});

/**
 * World and room chat: who may write and read a chat is who may read its world (docs/chat.md).
 * Messages go out as chat.message events on the chat's topic after they were stored.
 */
export class WorldChatService {
  constructor(private readonly deps: WorldChatDeps) {}

  /**
   * Checked as a direct message is, cheapest first: the body, the text filter, the sender's rate
   * limit (so a flood of refused sends cannot load the database), then the world and room.
   */
  async send(ctx: Ctx, worldId: string, roomId: string | undefined, rawBody: string): Promise<WorldMessage> {
    const me = callerOf(ctx).id;
    const { body, filtered } = this.deps.filter(trimmedBody(rawBody));
    await consumeOrThrow(this.deps.sendLimiter, me, 'Too many messages; wait before sending more.');
    const channel = await this.channel(ctx, worldId, roomId);
    let row: WorldMessageRow;
    try {
      row = await insertWorldMessage(ctx.em, {
        id: newId(),
        worldId: channel.worldId,
        roomId: channel.roomId,
        senderId: me,
        body,
        filtered,
        at: ctx.now(),
      });
    } catch (error) {
      // The world or room was deleted after it was read.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION))
        throw new AppError(ErrorCode.NOT_FOUND, 'This chat no longer exists.');
      throw error;
    }
    const message = toMessage(row);
    await this.deps.bus.publishCommitted(
      chatTopic(channel.worldId, channel.roomId),
      { t: 'chat.message', d: message, audience: channel.audience },
      ctx.log,
    );
    return message;
  }

  /** A page of the chat, newest first. */
  async history(
    ctx: Ctx,
    worldId: string,
    roomId: string | undefined,
    page: { limit: number; before?: string | undefined },
  ) {
    const before = decodeCursor(page.before, isTimeIdKey, 'before');
    const channel = await this.channel(ctx, worldId, roomId);
    const keyset = { before, limit: page.limit + 1 };
    const rows = channel.roomId
      ? await roomMessagesOf(ctx.em, channel.roomId, keyset)
      : await worldMessagesOf(ctx.em, channel.worldId, keyset);
    return pageFrom(rows, page.limit, toMessage, (row) => [row.created_key, row.id]);
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
