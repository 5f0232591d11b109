import { dmConversations, dmHistory, dmSend } from '../../../protocol/chat.js';
import { chatGroupHistory, chatSendToGroup } from '../../../protocol/groups.js';
import {
  chatRoomHistory,
  chatSend,
  chatSendToRoom,
  chatSendToWorld,
  chatWorldHistory,
} from '../../../protocol/world-chat.js';
import { statementsAtOnce } from '../../platform/batcher.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { GroupsApi } from '../groups/index.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { chatFrames } from './chat.frames.js';
import { ChatService } from './chat.service.js';
import { refreshConversationBlock } from './dm.repository.js';
import { readMarkOf } from './dm-reads.repository.js';
import { deleteMessage, messageTarget } from './messages.repository.js';
import { ReadMarkAnnouncer } from './read-marks.js';
import { createTextFilter } from './text-filter.js';
import { CHAT_TOPIC_PREFIX, chatTopic, WorldChatService } from './world-chat.service.js';

export type { MessageTargetRow } from './messages.repository.js';
/** SQL fragment for other modules' statements that show a message beside their rows (reports). */
export { messageSql } from './messages.repository.js';
export { chatTopic };

/** What other modules may use of chat: a single message of any kind, for moderation. */
export interface ChatApi {
  /** The message with what decides who may see it; undefined when there is none. */
  messageTarget: typeof messageTarget;
  /** Deletes the message, in the caller's transaction (a moderator's decision). */
  deleteMessage: typeof deleteMessage;
}

/**
 * Direct messages (sending through the text filter and rate limit, history, conversation list) and
 * world, room and group chat (docs/chat.md).
 */
export const chatModule = defineModule({
  name: 'chat',
  entities: [],
  tables: ['conversations', 'conversation_participants', 'messages'],
  // users and profiles for the SQL fragments the direct messages' statements read them with.
  needs: ['users', 'profiles', 'social', 'worlds', 'groups'],
  setup(
    { bus, kv, config, gateway, metrics, db, log, ctx },
    {
      social,
      worlds,
      groups,
    }: { users: UsersApi; profiles: ProfilesApi; social: SocialApi; worlds: WorldsApi; groups: GroupsApi },
  ) {
    const filter = createTextFilter(config.DM_FILTER_MODE);
    // A conversation's `blocked` marker follows the blocks, in the block's own transaction.
    social.onPairBlockChange(refreshConversationBlock);
    // A socket that rejoins a chat can be sent the messages it missed, as its own events are.
    bus.recordTopics(CHAT_TOPIC_PREFIX);
    const sendLimiter = (keyPrefix: string) =>
      createLimiter(kv, {
        keyPrefix,
        points: config.DM_RATE_LIMIT_COUNT,
        durationSeconds: config.DM_RATE_LIMIT_WINDOW_SECONDS,
      });
    const readMarks = new ReadMarkAnnouncer({
      bus,
      kv,
      log,
      storedMark: (conversationId, userId) =>
        readMarkOf(ctx({ user: null, log, ip: 'internal' }).data, conversationId, userId),
    });
    const chat = new ChatService({
      bus,
      social,
      readMarks,
      sendLimiter: sendLimiter('dm-send'),
      filter,
      storeConcurrency: statementsAtOnce(db.poolSize),
      observeStoreBatch: (size) => metrics.statementBatchSize.observe({ statement: 'dm_store' }, size),
    });
    // A limit of its own: a busy world chat does not use up a user's direct messages, nor the reverse.
    const worldChat = new WorldChatService({
      bus,
      worlds,
      groups,
      sendLimiter: sendLimiter('world-chat-send'),
      filter,
    });
    const api: ChatApi = { messageTarget, deleteMessage };
    return {
      api,
      operations: [
        serve(dmSend, (ctx, { user_id, body }) => chat.send(ctx, user_id, body)),
        serve(dmHistory, (ctx, { user_id, ...page }) => chat.history(ctx, user_id, page)),
        serve(dmConversations, (ctx, page) => chat.conversations(ctx, page)),
        serve(chatSendToWorld, (ctx, { world_id, body }) => worldChat.send(ctx, world_id, undefined, body)),
        serve(chatSendToRoom, (ctx, { world_id, room_id, body }) =>
          worldChat.send(ctx, world_id, room_id, body),
        ),
        serve(chatSend, (ctx, { world_id, room_id, body }) => worldChat.send(ctx, world_id, room_id, body)),
        serve(chatWorldHistory, (ctx, { world_id, ...page }) =>
          worldChat.history(ctx, world_id, undefined, page),
        ),
        serve(chatRoomHistory, (ctx, { world_id, room_id, ...page }) =>
          worldChat.history(ctx, world_id, room_id, page),
        ),
        serve(chatSendToGroup, (ctx, { group_id, body }) => worldChat.sendToGroup(ctx, group_id, body)),
        serve(chatGroupHistory, (ctx, { group_id, ...page }) => worldChat.groupHistory(ctx, group_id, page)),
        ...chatFrames({ worldChat, gateway }),
      ],
      stop: async () => readMarks.close(),
    };
  },
});
