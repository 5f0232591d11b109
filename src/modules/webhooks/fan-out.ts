import { type WebhookEventType, webhookEventTypes } from '../../../protocol/webhooks.js';
import type { DataAccess } from '../../platform/data-access.js';
import { newId } from '../../platform/ids.js';
import type { DomainEvent, Outbox } from '../../platform/outbox.js';
import { insertDeliveries, SUBSCRIBED_ENDPOINT_EXISTS_SQL, subscriberIds } from './deliveries.repository.js';
import { deliveryBody } from './event-bodies.js';

/**
 * The webhooks' side of the outbox (docs/webhooks.md): one consumer per event type of the
 * catalogue, so every such event an enabled endpoint subscribes to is recorded in the transaction
 * of its change like any domain event, and after the commit its consumer writes one delivery per
 * endpoint subscribed to it.
 * The outbox retries a fan-out that failed; a pair (endpoint, event) is written once.
 */
export function consumeWebhookEvents(
  outbox: Pick<Outbox, 'consume'>,
  options: { data: () => DataAccess; clock: () => Date; delivered: () => void },
): void {
  for (const type of webhookEventTypes) {
    outbox.consume({
      name: `webhooks:${type}`,
      type,
      retry: { leaseSeconds: 30, maxAttempts: 20 },
      onlyIf: SUBSCRIBED_ENDPOINT_EXISTS_SQL,
      handle: (event) => fanOut(type, event, options),
    });
  }
}

async function fanOut(
  type: WebhookEventType,
  event: DomainEvent,
  { data, clock, delivered }: { data: () => DataAccess; clock: () => Date; delivered: () => void },
): Promise<void> {
  const endpoints = await subscriberIds(data(), type, new Date(event.at));
  if (endpoints.length === 0) return;
  const deliveries = endpoints.map((endpointId) => {
    const id = newId();
    return { id, endpointId, body: deliveryBody(id, type, event) };
  });
  await insertDeliveries(data(), event, deliveries, clock());
  delivered();
}
