import type { z } from 'zod';
import { chatJoin, chatLeave, joinedChat } from '../../../protocol/world-chat.js';
import { callerOf } from '../../platform/context.js';
import type { Gateway } from '../../platform/gateway/gateway.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import type { ChannelChatService } from './channel-chat.service.js';

/** A join's ack: the channel's ids (as its messages show them) and where its stream stands. */
type Joined = z.input<typeof chatJoin.response>;

/** The chat frames only the socket has: joining a channel's chat (any kind's) and leaving it. */
export function chatFrames({
  channels,
  gateway,
}: {
  channels: ChannelChatService;
  gateway: Gateway;
}): OperationBinding[] {
  return [
    // Over WS_MAX_SUBSCRIPTIONS the gateway refuses with SUBSCRIPTION_LIMIT and subscribes nothing.
    // With `recover`, the messages missed since are sent before the ack (docs/recovery.md).
    serve(chatJoin, async (ctx, input, connection) => {
      const names = joinedChat(input);
      const { target, topic, deliveryFilter, recheckJoin } = await channels.joinable(ctx, names);
      if (typeof topic !== 'string')
        throw new Error('A chat channel without a topic of its own cannot be joined.');
      const filter = deliveryFilter?.(callerOf(ctx).id);
      const caughtUp = await gateway.subscribeRecovering(
        connection,
        filter ? { topic, filter } : { topic },
        input.recover,
      );
      // Access an event can end (a kick) is checked again now that the subscription exists: a
      // kick committed between the check and the subscription ended no subscription, and a later
      // kick's unsubscribe finds it.
      if (recheckJoin) {
        try {
          await channels.joinable(ctx, names);
        } catch (error) {
          gateway.unsubscribe(connection, [topic]);
          throw error;
        }
      }
      // The channel's ids are the names of the join's ack: the protocol lists each kind's.
      return { ...target, ...caughtUp } as Joined;
    }),
    // Joins are kept under canonical ids (as the database spells them), so match them that way.
    serve(chatLeave, (_ctx, input, connection) => {
      gateway.unsubscribe(connection, [channels.topicNamed(joinedChat(input))]);
      return {};
    }),
  ];
}
