import type { WebhookDelivery, WebhookEndpoint } from '../../../protocol/webhooks.js';
import { type Ctx, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { idOr, newId } from '../../platform/ids.js';
import { quotaExceeded } from '../../platform/quota.js';
import type { AuditApi } from '../audit/index.js';
import { checkUrl, type Resolve } from './address-guard.js';
import {
  type DeliveryRow,
  type DeliveryStatus,
  deliveriesPage,
  redeliver as redeliverRow,
} from './deliveries.repository.js';
import {
  deleteEndpoint,
  type EndpointChanges,
  type EndpointRow,
  endpointById,
  endpointsPage,
  insertEndpoint,
  rotateSecret,
  updateEndpoint,
} from './endpoints.repository.js';
import { newSecret } from './signing.js';

export interface WebhooksDeps {
  audit: AuditApi;
  maxEndpoints: number;
  allowPrivateNetworks: boolean;
  rotationGraceSeconds: number;
  /** Injected by tests; the system resolver otherwise. */
  resolve?: Resolve;
  /** A redelivery or an endpoint enabled again made something due: attempt it now rather than at the next pass. */
  wakeDeliveries: () => void;
}

const noSuchEndpoint = () => new AppError(ErrorCode.NOT_FOUND, 'No such webhook endpoint.');

/**
 * Webhook endpoints and their delivery logs, for admins (docs/webhooks.md). Every change is
 * audited in its own transaction; a secret leaves only in the answer that made it.
 */
export class WebhooksService {
  constructor(private readonly deps: WebhooksDeps) {}

  async create(ctx: Ctx, input: { url: string; events: string[]; description?: string }) {
    const admin = requireRole(ctx, 'admin');
    const url = await this.checkedUrl(input.url);
    const secret = newSecret();
    const row = await transaction(ctx.data, async (tx) => {
      const created = await insertEndpoint(
        tx,
        {
          id: newId(),
          url,
          events: subscribed(input.events),
          description: input.description ?? '',
          secret,
          at: ctx.now(),
        },
        this.deps.maxEndpoints,
      );
      if (!created) {
        throw quotaExceeded(`At most ${this.deps.maxEndpoints} webhook endpoints.`, this.deps.maxEndpoints);
      }
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'webhooks.create',
        target: { type: 'webhook', id: created.id },
        before: null,
        after: endpointView(created),
      });
      return created;
    });
    return { ...endpointView(row), secret };
  }

  async list(ctx: Ctx, query: { limit: number; cursor?: string }) {
    requireRole(ctx, 'admin');
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await endpointsPage(ctx.data, after, query.limit + 1);
    return pageFrom(rows, query.limit, endpointView, (row) => [row.created_key, row.id]);
  }

  async get(ctx: Ctx, id: string): Promise<WebhookEndpoint> {
    requireRole(ctx, 'admin');
    return endpointView(await this.endpoint(ctx, id));
  }

  async update(ctx: Ctx, id: string, input: EndpointChanges): Promise<WebhookEndpoint> {
    const admin = requireRole(ctx, 'admin');
    const changes: EndpointChanges = {
      ...input,
      ...(input.url === undefined ? {} : { url: await this.checkedUrl(input.url) }),
      ...(input.events === undefined ? {} : { events: subscribed(input.events) }),
    };
    const endpointId = idOr(id, noSuchEndpoint);
    const updated = await transaction(ctx.data, async (tx) => {
      const changed = await updateEndpoint(tx, endpointId, changes, ctx.now());
      if (!changed) throw noSuchEndpoint();
      const [before, after] = [endpointView(changed.before), endpointView(changed.after)];
      const fields = (['url', 'events', 'enabled', 'description'] as const).filter(
        (field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]),
      );
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'webhooks.update',
        target: { type: 'webhook', id: after.id },
        before: Object.fromEntries(fields.map((field) => [field, before[field]])),
        after: Object.fromEntries(fields.map((field) => [field, after[field]])),
      });
      return { after, enabled: !before.enabled && after.enabled };
    });
    // Its pending deliveries that came due while it was disabled are due now.
    if (updated.enabled) this.deps.wakeDeliveries();
    return updated.after;
  }

  async delete(ctx: Ctx, id: string): Promise<void> {
    const admin = requireRole(ctx, 'admin');
    const endpointId = idOr(id, noSuchEndpoint);
    await transaction(ctx.data, async (tx) => {
      const deleted = await deleteEndpoint(tx, endpointId);
      if (!deleted) throw noSuchEndpoint();
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'webhooks.delete',
        target: { type: 'webhook', id: deleted.id },
        before: endpointView(deleted),
        after: null,
      });
    });
  }

  async rotateSecret(ctx: Ctx, id: string): Promise<{ secret: string }> {
    const admin = requireRole(ctx, 'admin');
    const endpointId = idOr(id, noSuchEndpoint);
    const secret = newSecret();
    const now = ctx.now();
    const graceUntil = new Date(now.getTime() + this.deps.rotationGraceSeconds * 1000);
    await transaction(ctx.data, async (tx) => {
      if (!(await rotateSecret(tx, endpointId, secret, graceUntil, now))) throw noSuchEndpoint();
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'webhooks.rotate_secret',
        target: { type: 'webhook', id: endpointId },
        before: null,
        after: null,
      });
    });
    return { secret };
  }

  async deliveries(ctx: Ctx, id: string, query: { status?: DeliveryStatus; limit: number; cursor?: string }) {
    requireRole(ctx, 'admin');
    const endpoint = await this.endpoint(ctx, id);
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await deliveriesPage(ctx.data, endpoint.id, query.status ?? null, after, query.limit + 1);
    return pageFrom(rows, query.limit, deliveryView, (row) => [row.created_key, row.id]);
  }

  async redeliver(ctx: Ctx, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    const admin = requireRole(ctx, 'admin');
    const endpoint = await this.endpoint(ctx, endpointId);
    if (!endpoint.enabled) {
      throw new AppError(ErrorCode.CONFLICT, 'This endpoint is disabled; enable it to redeliver.');
    }
    const noSuchDelivery = () => new AppError(ErrorCode.NOT_FOUND, 'This endpoint has no such delivery.');
    const id = idOr(deliveryId, noSuchDelivery);
    const row = await transaction(ctx.data, async (tx) => {
      const again = await redeliverRow(tx, endpoint.id, id, ctx.now());
      if (!again) throw noSuchDelivery();
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: 'webhooks.redeliver',
        target: { type: 'webhook', id: endpoint.id },
        before: null,
        after: { delivery_id: again.id },
      });
      return again;
    });
    this.deps.wakeDeliveries();
    return deliveryView(row);
  }

  private async endpoint(ctx: Ctx, id: string): Promise<EndpointRow> {
    const row = await endpointById(ctx.data, idOr(id, noSuchEndpoint));
    if (!row) throw noSuchEndpoint();
    return row;
  }

  /** The URL as given once it passed the address rules; else 422 naming body.url. */
  private async checkedUrl(url: string): Promise<string> {
    const check = await checkUrl(url, {
      allowPrivateNetworks: this.deps.allowPrivateNetworks,
      ...(this.deps.resolve ? { resolve: this.deps.resolve } : {}),
    });
    if (check.ok) return url;
    throw new AppError(ErrorCode.VALIDATION_FAILED, `The url ${check.reason}.`, {
      errors: [{ path: 'body.url', message: check.reason }],
    });
  }
}

/** `["*"]`, or the names with duplicates collapsed, in the order given. */
const subscribed = (events: readonly string[]) => [...new Set(events)];

function endpointView(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    description: row.description,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function deliveryView(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? (row.next_attempt_at?.toISOString() ?? null) : null,
    created_at: row.created_at.toISOString(),
    delivered_at: row.delivered_at?.toISOString() ?? null,
  };
}
