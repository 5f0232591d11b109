import { presenceSubscribe, presenceUnsubscribe } from '../../../protocol/presence.js';
import type { Gateway } from '../../platform/gateway/gateway.js';
import { canonicalId } from '../../platform/ids.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import { type PresenceService, presenceTopic } from './presence.service.js';

/** The presence frames only the socket has: following users' presence events and stopping. */
export function presenceFrames({
  presence,
  gateway,
}: {
  presence: PresenceService;
  gateway: Gateway;
}): OperationBinding[] {
  return [
    // The ack carries everyone's current status, read once the subscriptions are active so that
    // no change falls between the two.
    serve(presenceSubscribe, async (ctx, { user_ids }, connection) => {
      const views = await presence.views(ctx, user_ids);
      const visible = [...views].filter(([, view]) => view.visible);
      await gateway.subscribe(
        connection,
        visible.map(([id, view]) => ({ topic: presenceTopic(id), filter: view.mayReceive })),
      );
      return { presence: await presence.statuses(views) };
    }),
    // Subscriptions are made under the canonical id (see PresenceService.views), so match them that way.
    serve(presenceUnsubscribe, (_ctx, { user_ids }, connection) => {
      gateway.unsubscribe(
        connection,
        user_ids.map((id) => presenceTopic(canonicalId(id))),
      );
      return {};
    }),
  ];
}
