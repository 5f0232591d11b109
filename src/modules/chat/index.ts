import { dmConversations, dmHistory, dmSend } from '../../../protocol/chat.js';
import { statementsAtOnce } from '../../platform/batcher.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { CHAT_TOPIC_PREFIX, type ChannelChat, ChannelChatService } from './channel-chat.service.js';
import { chatFrames } from './chat.frames.js';
import { ChatService } from './chat.service.js';
import type { ChannelNames, ChannelTarget, ChatChannelResolver } from './chat-channel.js';
import { refreshConversationBlock } from './dm.repository.js';
import { readMarkOf } from './dm-reads.repository.js';
import { deleteMessage, messageTarget } from './messages.repository.js';
import { ReadMarkAnnouncer } from './read-marks.js';
import { createTextFilter } from './text-filter.js';

/** The contract of a channel kind's resolver, and the pipeline `channelKind` answers for it. */
export type { ChannelChat, ChannelMessage } from './channel-chat.service.js';
export { chatTopic } from './channel-chat.service.js';
export type { ChatChannel, ChatChannelResolver, ChatUse } from './chat-channel.js';
export type { MessageTargetRow } from './messages.repository.js';
/** SQL fragment for other modules' statements that show a message beside their rows (reports). */
export { messageSql } from './messages.repository.js';

/** What other modules may use of chat: channel chat for their things, and single messages for moderation. */
export interface ChatApi {
  /**
   * Adds a kind of channel, from the resolver its module implements, and answers the pipeline
   * bound to it for that module's send and history operations (docs/chat.md, "Channel chat").
   * A kind is added once, at setup.
   */
  channelKind<Names extends ChannelNames, Target extends ChannelTarget>(
    resolver: ChatChannelResolver<Names, Target>,
  ): ChannelChat<Names, Target>;
  /** The message with what decides who may see it; undefined when there is none. */
  messageTarget: typeof messageTarget;
  /** Deletes the message, in the caller's transaction (a moderator's decision). */
  deleteMessage: typeof deleteMessage;
}

/**
 * Direct messages (sending through the text filter and rate limit, history, conversation list) and
 * channel chat, the one pipeline of the chats other modules' things have: worlds, rooms, groups
 * (docs/chat.md).
 */
export const chatModule = defineModule({
  name: 'chat',
  tables: ['conversations', 'conversation_participants', 'messages'],
  // users and profiles for the SQL fragments the direct messages' statements read them with.
  needs: ['users', 'profiles', 'social'],
  setup(
    { bus, kv, config, gateway, metrics, db, log, ctx, outbox },
    { social }: { users: UsersApi; profiles: ProfilesApi; social: SocialApi },
  ) {
    const filter = createTextFilter(config.DM_FILTER_MODE);
    // A conversation's `blocked` marker follows the blocks, in the block's own transaction.
    social.onPairBlockChange(refreshConversationBlock);
    // A socket that rejoins a chat can be sent the messages it missed, as its own events are.
    bus.recordTopics(CHAT_TOPIC_PREFIX);
    // One per-sender counter for every message a user sends: direct messages and world, room,
    // group and party chat together, as the contract says. Its keys keep the prefix direct
    // messages were first counted under, so the counters carry over between releases.
    const sendLimiter = createLimiter(kv, {
      keyPrefix: 'dm-send',
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
      sendLimiter,
      filter,
      storeConcurrency: statementsAtOnce(db.poolSize),
      observeStoreBatch: (size) => metrics.statementBatchSize.observe({ statement: 'dm_store' }, size),
      outbox,
    });
    const channels = new ChannelChatService({
      bus,
      sendLimiter,
      filter,
      storeConcurrency: statementsAtOnce(db.poolSize),
      observeStoreBatch: (size) => metrics.statementBatchSize.observe({ statement: 'channel_store' }, size),
    });
    const api: ChatApi = {
      channelKind: (resolver) => channels.add(resolver),
      messageTarget,
      deleteMessage,
    };
    return {
      api,
      operations: [
        serve(dmSend, (ctx, { user_id, body }) => chat.send(ctx, user_id, body)),
        serve(dmHistory, (ctx, { user_id, ...page }) => chat.history(ctx, user_id, page)),
        serve(dmConversations, (ctx, page) => chat.conversations(ctx, page)),
        ...chatFrames({ channels, gateway }),
      ],
      stop: async () => readMarks.close(),
    };
  },
});
