import { type WebhookEventType, webhookEventTypes } from '../../../protocol/webhooks.js';
import type { DataAccess } from '../../platform/data-access.js';
import { newId } from '../../platform/ids.js';
import type { DomainEvent, Outbox } from '../../platform/outbox.js';
import {
  insertDeliveries,
  SUBSCRIBED_ENDPOINT_EXISTS_SQL,
  subscriptionsOf,
} from './deliveries.repository.js';
import { deliveryBody } from './event-bodies.js';

/**
 * The webhooks' side of the outbox (docs/webhooks.md): one consumer per event type of the
 * catalogue, so every such event an enabled endpoint subscribes to is recorded in the transaction
 * of its change like any domain event, and after the commit its consumer writes one delivery per
 * endpoint subscribed to it.
 * The outbox retries a fan-out that failed; a pair (endpoint, event) is written once.
 */
export function consumeWebhookEvents(outbox: Pick<Outbox, 'consume'>, options: FanOutOptions): void {
  for (const type of webhookEventTypes) {
    outbox.consume({
      name: `webhooks:${type}`,
      type,
      retry: { leaseSeconds: 30, maxAttempts: 20 },
      onlyIf: SUBSCRIBED_ENDPOINT_EXISTS_SQL,
      handle: (event) => fanOut(type, [event], options),
      // A claim's events of one type fan out together: one read and one write for all of them.
      handleMany: (events) => fanOut(type, events, options),
    });
  }
}

interface FanOutOptions {
  data: () => DataAccess;
  clock: () => Date;
  delivered: () => void;
}

async function fanOut(
  type: WebhookEventType,
  events: readonly DomainEvent[],
  { data, clock, delivered }: FanOutOptions,
): Promise<void> {
  const pairs = await subscriptionsOf(
    data(),
    type,
    events.map((event) => new Date(event.at)),
  );
  if (pairs.length === 0) return;
  const deliveries = pairs.map(({ n, endpoint_id }) => {
    const event = events[n] as DomainEvent;
    const id = newId();
    return { id, endpointId: endpoint_id, eventId: event.id, body: deliveryBody(id, type, event) };
  });
  await insertDeliveries(data(), type, deliveries, clock());
  delivered();
}
