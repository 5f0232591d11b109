import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { WebhookEventType } from '../../../protocol/webhooks.js';
import type { DomainEvent } from '../../platform/outbox.js';

/**
 * A webhook's `data` for each event type of the catalogue (docs/webhooks.md), from the domain
 * event the outbox recorded: the user events name their user as an object, the others carry the
 * domain event's data as it is.
 */
const dataOf: { [T in WebhookEventType]: (data: DomainEventData[T]) => unknown } = {
  'user.registered': ({ user_id, username, created_at }) => ({ user: { id: user_id, username, created_at } }),
  'user.deleted': ({ user_id }) => ({ user: { id: user_id } }),
  'group.created': (data) => data,
  'report.created': (data) => data,
  'economy.purchase.completed': (data) => data,
  'economy.payout.requested': (data) => data,
  'gameserver.failed': (data) => data,
};

/**
 * The body of delivery `id` of `event`: written once and sent as these same bytes on every
 * attempt (the signature covers them).
 */
export function deliveryBody(id: string, type: WebhookEventType, event: DomainEvent): string {
  const data = (dataOf[type] as (data: unknown) => unknown)(event.data);
  return JSON.stringify({ id, type, created_at: event.at, data });
}
