import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { isStorableText, text, UNSTORABLE_TEXT_MESSAGE } from './text.js';

/**
 * Outbound webhooks (docs/webhooks.md): endpoints an admin registers, each receiving the events
 * of the catalogue it subscribes to as signed POSTs (Standard Webhooks), retried with backoff,
 * every attempt in a delivery log. Admins only, checked before the body is read.
 */

const tag = 'webhooks';
const id = z.string().max(64);

/** The event types a webhook endpoint may subscribe to; `*` subscribes to every one, later ones included. */
export const webhookEventTypes = [
  'user.registered',
  'user.deleted',
  'group.created',
  'report.created',
  'economy.purchase.completed',
  'economy.payout.requested',
  'gameserver.failed',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

export const WEBHOOK_URL_MAX = 2048;
export const WEBHOOK_EVENTS_MAX = 50;
export const WEBHOOK_DESCRIPTION_MAX = 500;

const eventsSchema = z.union([
  z.tuple([z.literal('*')]),
  z.array(z.enum(webhookEventTypes)).min(1).max(WEBHOOK_EVENTS_MAX),
]);
/**
 * Stored as given, so storable text; the address rules (private networks, resolution) are the
 * service's: they need the resolver.
 */
const urlSchema = z.string().min(1).max(WEBHOOK_URL_MAX).refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    enabled: z.boolean(),
    description: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof webhookEndpointSchema>;

export const webhookDeliveryStatusSchema = z.enum(['pending', 'delivered', 'failed']);

export const webhookDeliverySchema = z
  .object({
    id: z.string(),
    event_type: z.string(),
    status: webhookDeliveryStatusSchema,
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: z.string().nullable(),
    created_at: z.string(),
    delivered_at: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

const secretSchema = z.object({ secret: z.string() });

export const webhooksCreate = operation('webhooks.admin.create', {
  tag,
  role: 'admin',
  summary:
    'Admins: register an endpoint for some event types (or ["*"]). The answer holds its secret, shown this once. The URL must pass the address rules; at most WEBHOOK_MAX_ENDPOINTS endpoints. Audited as webhooks.create.',
  rest: { method: 'POST', path: '/api/admin/webhooks', status: 201 },
  request: z
    .object({
      url: urlSchema,
      events: eventsSchema,
      description: text(0, WEBHOOK_DESCRIPTION_MAX).optional(),
    })
    .strict(),
  response: webhookEndpointSchema.extend(secretSchema.shape),
  errors: [401, 403, 409, 422],
});

export const webhooksList = operation('webhooks.admin.list', {
  tag,
  role: 'admin',
  summary: 'Admins: the endpoints, newest first (never their secrets).',
  rest: { method: 'GET', path: '/api/admin/webhooks' },
  request: z.object(listQuery).strict(),
  response: pageOf(webhookEndpointSchema),
  errors: [401, 403, 422],
});

export const webhooksGet = operation('webhooks.admin.get', {
  tag,
  role: 'admin',
  summary: 'Admins: one endpoint (never its secret).',
  rest: { method: 'GET', path: '/api/admin/webhooks/:webhook_id' },
  request: z.object({ webhook_id: id }).strict(),
  response: webhookEndpointSchema,
  errors: [401, 403, 404, 422],
});

export const webhooksUpdate = operation('webhooks.admin.update', {
  tag,
  role: 'admin',
  summary:
    'Admins: change an endpoint. Disabled, it gets no deliveries for the events meanwhile, and its pending ones wait until it is enabled again. Audited as webhooks.update.',
  rest: { method: 'PATCH', path: '/api/admin/webhooks/:webhook_id' },
  request: z
    .object({
      webhook_id: id,
      url: urlSchema.optional(),
      events: eventsSchema.optional(),
      enabled: z.boolean().optional(),
      description: text(0, WEBHOOK_DESCRIPTION_MAX).optional(),
    })
    .strict(),
  response: webhookEndpointSchema,
  errors: [401, 403, 404, 422],
});

export const webhooksDelete = operation('webhooks.admin.delete', {
  tag,
  role: 'admin',
  summary: 'Admins: remove an endpoint; its pending deliveries are dropped. Audited as webhooks.delete.',
  rest: { method: 'DELETE', path: '/api/admin/webhooks/:webhook_id', status: 204 },
  request: z.object({ webhook_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const webhooksRotateSecret = operation('webhooks.admin.rotateSecret', {
  tag,
  role: 'admin',
  summary:
    'Admins: a new secret for an endpoint, shown this once. For WEBHOOK_SECRET_ROTATION_GRACE_SECONDS deliveries carry a signature by the previous one too. Audited as webhooks.rotate_secret.',
  rest: { method: 'POST', path: '/api/admin/webhooks/:webhook_id/rotate-secret' },
  request: z.object({ webhook_id: id }).strict(),
  response: secretSchema,
  errors: [401, 403, 404, 422],
});

export const webhooksDeliveries = operation('webhooks.admin.deliveries', {
  tag,
  role: 'admin',
  summary: "Admins: an endpoint's deliveries, newest first, optionally in one status.",
  rest: { method: 'GET', path: '/api/admin/webhooks/:webhook_id/deliveries' },
  request: z
    .object({ webhook_id: id, status: webhookDeliveryStatusSchema.optional(), ...listQuery })
    .strict(),
  response: pageOf(webhookDeliverySchema),
  errors: [401, 403, 404, 422],
});

export const webhooksRedeliver = operation('webhooks.admin.redeliver', {
  tag,
  role: 'admin',
  summary:
    'Admins: send a delivery again, now, with a fresh retry budget (same webhook-id and body). A disabled endpoint answers 409. Audited as webhooks.redeliver.',
  rest: {
    method: 'POST',
    path: '/api/admin/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
    status: 202,
  },
  request: z.object({ webhook_id: id, delivery_id: id }).strict(),
  response: webhookDeliverySchema,
  errors: [401, 403, 404, 409, 422],
});

export const webhookOperations = [
  webhooksCreate,
  webhooksList,
  webhooksGet,
  webhooksUpdate,
  webhooksDelete,
  webhooksRotateSecret,
  webhooksDeliveries,
  webhooksRedeliver,
] as const;
