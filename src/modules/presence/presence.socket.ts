import { ClientFrameType } from '../../../protocol/frames.js';
import type { AppServices } from '../../app.js';
import type { Connection } from '../../platform/gateway/connection.js';
import { canonicalId } from '../../platform/ids.js';
import { presenceTopic } from './presence.service.js';

/** Gateway twins of the presence endpoints, plus subscriptions to presence events. */
export function registerPresenceFrames(services: AppServices) {
  const { gateway, presence } = services;
  const ctx = (connection: Connection) =>
    services.ctx({ user: connection.user ?? null, log: services.log, ip: connection.remoteAddress });

  gateway.handle(ClientFrameType.PRESENCE_HEARTBEAT, (connection) => presence.heartbeat(ctx(connection)));

  gateway.handle(ClientFrameType.PRESENCE_QUERY, async (connection, { user_ids }) => ({
    presence: await presence.lookup(ctx(connection), user_ids),
  }));

  gateway.handle(ClientFrameType.PRESENCE_STATUS, (connection, { status_message }) =>
    presence.setStatus(ctx(connection), status_message),
  );

  // Subscribes to each visible user's presence topic; the ack carries everyone's current status,
  // read once the subscriptions are active so that no change falls between the two.
  gateway.handle(ClientFrameType.PRESENCE_SUBSCRIBE, async (connection, { user_ids }) => {
    const views = await presence.views(ctx(connection), user_ids);
    const visible = [...views].filter(([, view]) => view.visible);
    await gateway.subscribe(
      connection,
      visible.map(([id, view]) => ({ topic: presenceTopic(id), filter: view.mayReceive })),
    );
    return { presence: await presence.statuses(views) };
  });

  gateway.handle(ClientFrameType.PRESENCE_UNSUBSCRIBE, (connection, { user_ids }) => {
    // Subscriptions are made under the canonical id (see PresenceService.views), so match them that way.
    gateway.unsubscribe(
      connection,
      user_ids.map((id) => presenceTopic(canonicalId(id))),
    );
    return {};
  });
}
