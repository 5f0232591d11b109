import {
  webhooksCreate,
  webhooksDelete,
  webhooksDeliveries,
  webhooksGet,
  webhooksList,
  webhooksRedeliver,
  webhooksRotateSecret,
  webhooksUpdate,
} from '../../../protocol/webhooks.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { AuditApi } from '../audit/index.js';
import type { Resolve } from './address-guard.js';
import { DeliveryWorker } from './delivery-worker.js';
import { consumeWebhookEvents } from './fan-out.js';
import { registerWebhookMetrics } from './webhooks.metrics.js';
import { WebhooksService } from './webhooks.service.js';

/**
 * How often each node looks for due deliveries when nothing woke it: fan-outs, redeliveries, an
 * endpoint enabled again and this node's own retries wake it when they are due.
 */
const DELIVERY_INTERVAL_MS = 5_000;

export interface WebhooksApi {
  /** Attempts every due delivery, waits for the attempts, and prunes the expired ones (tests). */
  runDeliveries(): Promise<void>;
}

/**
 * Signed, retried outbound webhooks (docs/webhooks.md); `resolve` replaces the system resolver,
 * `deliveryIntervalMs` the delivery job's safety pass (tests).
 */
export function createWebhooksModule(
  options: { resolve?: Resolve; clock?: () => Date; deliveryIntervalMs?: number } = {},
) {
  return defineModule({
    name: 'webhooks',
    tables: ['webhook_endpoints', 'webhook_deliveries'],
    needs: ['audit'],
    setup({ config, db, log, metrics, outbox }, { audit }: { audit: AuditApi }) {
      const clock = options.clock ?? (() => new Date());
      const onOutcome = registerWebhookMetrics(metrics.registry, () => db.data);
      const worker = new DeliveryWorker({
        data: () => db.data,
        log,
        clock,
        intervalMs: options.deliveryIntervalMs ?? DELIVERY_INTERVAL_MS,
        onOutcome,
        settings: {
          timeoutSeconds: config.WEBHOOK_TIMEOUT_SECONDS,
          retryBaseSeconds: config.WEBHOOK_RETRY_BASE_SECONDS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
          retentionDays: config.WEBHOOK_DELIVERY_RETENTION_DAYS,
          ...(options.resolve ? { resolve: options.resolve } : {}),
        },
      });
      consumeWebhookEvents(outbox, { data: () => db.data, clock, delivered: () => worker.wake() });
      const webhooks = new WebhooksService({
        audit,
        maxEndpoints: config.WEBHOOK_MAX_ENDPOINTS,
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        rotationGraceSeconds: config.WEBHOOK_SECRET_ROTATION_GRACE_SECONDS,
        ...(options.resolve ? { resolve: options.resolve } : {}),
        wakeDeliveries: () => worker.wake(),
      });
      const api: WebhooksApi = { runDeliveries: () => worker.runUntilIdle() };
      return {
        api,
        operations: [
          serve(webhooksCreate, (ctx, input) => webhooks.create(ctx, input)),
          serve(webhooksList, (ctx, query) => webhooks.list(ctx, query)),
          serve(webhooksGet, (ctx, { webhook_id }) => webhooks.get(ctx, webhook_id)),
          serve(webhooksUpdate, (ctx, { webhook_id, ...changes }) =>
            webhooks.update(ctx, webhook_id, changes),
          ),
          serve(webhooksDelete, (ctx, { webhook_id }) => webhooks.delete(ctx, webhook_id)),
          serve(webhooksRotateSecret, (ctx, { webhook_id }) => webhooks.rotateSecret(ctx, webhook_id)),
          serve(webhooksDeliveries, (ctx, { webhook_id, ...query }) =>
            webhooks.deliveries(ctx, webhook_id, query),
          ),
          serve(webhooksRedeliver, (ctx, { webhook_id, delivery_id }) =>
            webhooks.redeliver(ctx, webhook_id, delivery_id),
          ),
        ],
        async start() {
          worker.start();
        },
        stop: () => worker.stop(),
      };
    },
  });
}

export const webhooksModule = createWebhooksModule();
