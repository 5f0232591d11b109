import { Counter, type Registry } from 'prom-client';
import { registerBacklogGauges } from '../../platform/backlog-gauges.js';
import type { DataAccess } from '../../platform/data-access.js';
import { type DeliveryStatus, dueBacklog } from './deliveries.repository.js';

/** A delivery's status after an attempt, as the metric names the outcome. */
const OUTCOMES: Record<DeliveryStatus, string> = {
  delivered: 'delivered',
  pending: 'retrying',
  failed: 'failed',
};

/**
 * `atrium_webhook_attempts_total{outcome}` (delivered; retrying: failed, another attempt is due
 * later; failed: the last attempt failed) and the backlog of due deliveries. Answers the function
 * the delivery worker calls with each attempt's outcome.
 */
export function registerWebhookMetrics(
  registry: Registry,
  data: () => DataAccess,
): (status: DeliveryStatus) => void {
  const attempts = new Counter({
    name: 'atrium_webhook_attempts_total',
    help: 'Webhook delivery attempts this process made, by outcome: delivered, retrying (failed, retried later) or failed (the last attempt failed).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of Object.values(OUTCOMES)) attempts.inc({ outcome }, 0);
  registerBacklogGauges(registry, {
    prefix: 'atrium_webhook',
    what: 'Webhook deliveries to enabled endpoints',
    read: () => dueBacklog(data()),
  });
  return (status) => attempts.inc({ outcome: OUTCOMES[status] });
}
