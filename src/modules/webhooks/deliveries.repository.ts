import type { Backlog } from '../../platform/backlog-gauges.js';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';

/** The SQL of webhook deliveries (migration 0035). */

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
  /** The row's keyset position: created_at to the microsecond. */
  created_key: string;
}

const COLUMNS = `id, endpoint_id, event_type, status, attempts, last_status_code, last_error, next_attempt_at,
  created_at, delivered_at, ${timeKeySql('created_at')} as created_key`;

/**
 * The webhooks consumers' `onlyIf` (src/platform/outbox.ts): whether an enabled endpoint subscribes
 * to events of type $2, checked by the statement that records such an event, so that an event no
 * endpoint would be sent costs no outbox rows, claim or fan-out. Endpoints are few
 * (WEBHOOK_ENDPOINTS_MAX): a scan of the table.
 */
export const SUBSCRIBED_ENDPOINT_EXISTS_SQL =
  "exists (select 1 from webhook_endpoints where enabled and (events = '{*}' or $2 = any (events)))";

/**
 * The endpoints each event of `type` goes to, for events recorded at `ats`: enabled since the
 * event's time and subscribed to its type. Answers (index into `ats`, endpoint id) pairs, in one
 * statement for a batch of events.
 */
export function subscriptionsOf(
  data: DataAccess,
  type: string,
  ats: readonly Date[],
): Promise<{ n: number; endpoint_id: string }[]> {
  return executeBound(
    data,
    `select e.n::int - 1 as n, w.id as endpoint_id
     from unnest($2::timestamptz[]) with ordinality as e (at, n)
     join webhook_endpoints w
       on w.enabled and w.enabled_since <= e.at and (w.events = '{*}' or $1 = any (w.events))`,
    [type, ats],
  );
}

export interface NewDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  body: string;
}

/**
 * Deliveries of events of `type`, due at `at`, in one statement; a pair (endpoint, event) written
 * before is left as it is.
 */
export async function insertDeliveries(
  data: DataAccess,
  type: string,
  deliveries: readonly NewDelivery[],
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `insert into webhook_deliveries
       (id, endpoint_id, event_id, event_type, body, status, attempts, budget_start, next_attempt_at, attempting, created_at)
     select d.id, d.endpoint_id, d.event_id, $1, d.body, 'pending', 0, 0, $2, false, $2
     from unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::text[]) as d (id, endpoint_id, event_id, body)
     on conflict (endpoint_id, event_id) do nothing`,
    [
      type,
      at,
      toUuidArray(deliveries.map((d) => d.id)),
      toUuidArray(deliveries.map((d) => d.endpointId)),
      toUuidArray(deliveries.map((d) => d.eventId)),
      deliveries.map((d) => d.body),
    ],
  );
}

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  body: string;
  /** Counting the attempt just claimed. */
  attempts: number;
  budget_start: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints (skip locked: each goes to one node),
 * counting the attempt and leasing it until `leaseUntil`: due again then if its node died.
 */
export function claimDue(
  data: DataAccess,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<ClaimedDelivery[]> {
  return executeBound<ClaimedDelivery>(
    data,
    `with due as (
       select d.id from webhook_deliveries d
       where d.status = 'pending' and d.next_attempt_at <= $1
         and exists (select 1 from webhook_endpoints e where e.id = d.endpoint_id and e.enabled)
       order by d.next_attempt_at
       limit $3
       for update of d skip locked
     )
     update webhook_deliveries d
     set attempts = d.attempts + 1, next_attempt_at = $2, attempting = true
     from due, webhook_endpoints e
     where d.id = due.id and e.id = d.endpoint_id
     returning d.id, d.body, d.attempts, d.budget_start, e.url, e.secret, e.previous_secret, e.previous_secret_until`,
    [now, leaseUntil, limit],
  );
}

export interface AttemptResult {
  status: DeliveryStatus;
  statusCode: number | null;
  error: string | null;
  /** When the next attempt is due; null unless still pending. */
  nextAttemptAt: Date | null;
  at: Date;
}

export interface EndedAttempt extends AttemptResult {
  claimed: Pick<ClaimedDelivery, 'id' | 'attempts'>;
}

/**
 * Writes the outcomes of ended attempts in one statement, each unless its delivery changed since
 * it was claimed (redelivered, or claimed again after its lease lapsed): that later attempt writes
 * its own. Answers one (nothing) per attempt, as `batched` wants.
 */
export async function recordAttempts(data: DataAccess, ended: readonly EndedAttempt[]): Promise<undefined[]> {
  await executeBound(
    data,
    `update webhook_deliveries d set
       status = o.status, last_status_code = o.status_code, last_error = o.error,
       next_attempt_at = o.next_attempt_at, attempting = false,
       delivered_at = case when o.status = 'delivered' then coalesce(d.delivered_at, o.at) else d.delivered_at end,
       finished_at = case when o.status = 'pending' then null else o.at end
     from unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::timestamptz[], $7::timestamptz[])
       as o (id, attempts, status, status_code, error, next_attempt_at, at)
     where d.id = o.id and d.attempts = o.attempts and d.attempting`,
    [
      toUuidArray(ended.map((attempt) => attempt.claimed.id)),
      ended.map((attempt) => attempt.claimed.attempts),
      ended.map((attempt) => attempt.status),
      ended.map((attempt) => attempt.statusCode),
      ended.map((attempt) => attempt.error),
      ended.map((attempt) => attempt.nextAttemptAt),
      ended.map((attempt) => attempt.at),
    ],
  );
  return ended.map(() => undefined);
}

export function deliveriesPage(
  data: DataAccess,
  endpointId: string,
  status: DeliveryStatus | null,
  after: readonly [string, string] | undefined,
  limit: number,
): Promise<DeliveryRow[]> {
  return executeBound<DeliveryRow>(
    data,
    `select ${COLUMNS} from webhook_deliveries
     where endpoint_id = $4 and ($5::text is null or status = $5) and ${beforeTimeIdKey('created_at', 'id')}
     order by created_at desc, id desc limit $1`,
    [limit, ...timeIdKeyParams(after), endpointId, status],
  );
}

/**
 * Makes a delivery of the endpoint pending again with a fresh retry budget, due at `at`; with an
 * attempt running, once that attempt's lease ends (one attempt at a time), and that attempt's
 * outcome is no longer written. Undefined when the endpoint has no such delivery.
 */
export async function redeliver(
  tx: DataAccess,
  endpointId: string,
  id: string,
  at: Date,
): Promise<DeliveryRow | undefined> {
  const [row] = await executeBound<DeliveryRow>(
    tx,
    `update webhook_deliveries set
       status = 'pending', budget_start = attempts, finished_at = null, attempting = false,
       next_attempt_at = case when attempting then next_attempt_at else $3 end
     where id = $2 and endpoint_id = $1
     returning ${COLUMNS}`,
    [endpointId, id, at],
  );
  return row;
}

/** Removes up to `limit` deliveries finished before `before`; answers how many. */
export async function pruneFinished(data: DataAccess, before: Date, limit: number): Promise<number> {
  const rows = await executeBound(
    data,
    `delete from webhook_deliveries where id in (
       select id from webhook_deliveries where status <> 'pending' and finished_at < $1 limit $2)
     returning 1`,
    [before, limit],
  );
  return rows.length;
}

/** The pending deliveries due to enabled endpoints (what claimDue would take), and the oldest one's wait. */
export async function dueBacklog(data: DataAccess): Promise<Backlog> {
  const [row] = await executeBound<{ due: number; oldest: number }>(
    data,
    `select count(*)::int as due, coalesce(extract(epoch from now() - min(d.next_attempt_at)), 0)::float8 as oldest
     from webhook_deliveries d
     where d.status = 'pending' and d.next_attempt_at <= now()
       and exists (select 1 from webhook_endpoints e where e.id = d.endpoint_id and e.enabled)`,
    [],
  );
  return { due: row?.due ?? 0, oldestDueSeconds: row?.oldest ?? 0 };
}
