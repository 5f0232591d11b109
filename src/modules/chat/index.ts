import { dmConversations, dmHistory, dmSend } from '../../../protocol/chat.js';
import { chatGroupHistory, chatSendToGroup } from '../../../protocol/groups.js';
import {
  chatJoin,
  chatLeave,
  chatRoomHistory,
  chatSend,
  chatSendToRoom,
  chatSendToWorld,
  chatWorldHistory,
  joinedChat,
} from '../../../protocol/world-chat.js';
import { statementsAtOnce } from '../../platform/batcher.js';
import { callerOf } from '../../platform/context.js';
import { canonicalId } from '../../platform/ids.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import { type GroupsApi, groupDeliveryFilter, groupTopic } from '../groups/index.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { ChatService } from './chat.service.js';
import { refreshConversationBlock } from './dm.repository.js';
import { readMarkOf } from './dm-reads.repository.js';
import { deleteMessage, messageTarget } from './messages.repository.js';
import { ReadMarkAnnouncer } from './read-marks.js';
import { createTextFilter } from './text-filter.js';
import { CHAT_TOPIC_PREFIX, chatDeliveryFilter, chatTopic, WorldChatService } from './world-chat.service.js';

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
        readMarkOf(ctx({ user: null, log, ip: 'internal' }).em, conversationId, userId),
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
        // Over WS_MAX_SUBSCRIPTIONS the gateway refuses with SUBSCRIPTION_LIMIT and subscribes nothing.
        // With `recover`, the messages missed since are sent before the ack (docs/recovery.md).
        serve(chatJoin, async (ctx, input, connection) => {
          const chat = joinedChat(input);
          if ('group_id' in chat) {
            const { topic, ...joined } = await worldChat.joinableGroup(ctx, chat.group_id);
            const filter = groupDeliveryFilter(callerOf(ctx).id);
            const caughtUp = await gateway.subscribeRecovering(connection, { topic, filter }, input.recover);
            // A kick committed between the check and the subscription ended no subscription:
            // checked again now that it exists, a later kick's unsubscribe finds it.
            try {
              await worldChat.joinableGroup(ctx, chat.group_id);
            } catch (error) {
              gateway.unsubscribe(connection, [topic]);
              throw error;
            }
            return { ...joined, ...caughtUp };
          }
          const { topic, ...joined } = await worldChat.joinable(ctx, chat.world_id, chat.room_id);
          const filter = chatDeliveryFilter(callerOf(ctx).id);
          return {
            ...joined,
            ...(await gateway.subscribeRecovering(connection, { topic, filter }, input.recover)),
          };
        }),
        // Joins are kept under canonical ids (as the database spells them), so match them that way.
        serve(chatLeave, (_ctx, input, connection) => {
          const chat = joinedChat(input);
          const topic =
            'group_id' in chat
              ? groupTopic(canonicalId(chat.group_id))
              : chatTopic(
                  canonicalId(chat.world_id),
                  chat.room_id === undefined ? null : canonicalId(chat.room_id),
                );
          gateway.unsubscribe(connection, [topic]);
          return {};
        }),
      ],
      stop: async () => readMarks.close(),
    };
  },
});
