import { chatJoin, chatLeave, joinedChat } from '../../../protocol/world-chat.js';
import { callerOf } from '../../platform/context.js';
import type { Gateway } from '../../platform/gateway/gateway.js';
import { canonicalId } from '../../platform/ids.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import { groupDeliveryFilter, groupTopic } from '../groups/index.js';
import { chatDeliveryFilter, chatTopic, type WorldChatService } from './world-chat.service.js';

/** The chat frames only the socket has: joining a world's, a room's or a group's chat and leaving it. */
export function chatFrames({
  worldChat,
  gateway,
}: {
  worldChat: WorldChatService;
  gateway: Gateway;
}): OperationBinding[] {
  return [
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
  ];
}
