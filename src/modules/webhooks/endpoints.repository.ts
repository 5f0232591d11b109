import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, lockNamed } from '../../platform/db.js';

/** The SQL of webhook endpoints (migration 0035). */

export interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  description: string;
  created_at: Date;
  updated_at: Date;
  /** The row's keyset position: created_at to the microsecond. */
  created_key: string;
}

const COLUMNS = `id, url, events, enabled, description, created_at, updated_at, ${timeKeySql('created_at')} as created_key`;

export interface NewEndpoint {
  id: string;
  url: string;
  events: string[];
  description: string;
  secret: string;
  at: Date;
}

/**
 * Inserts the endpoint unless `max` exist already: the count and the insert take turns on a lock,
 * so two creations racing for the last place cannot both pass. Undefined when refused.
 */
export async function insertEndpoint(
  tx: DataAccess,
  endpoint: NewEndpoint,
  max: number,
): Promise<EndpointRow | undefined> {
  await lockNamed(tx, 'webhook_endpoints');
  const [row] = await executeBound<EndpointRow>(
    tx,
    `insert into webhook_endpoints
       (id, url, events, enabled, description, secret, enabled_since, created_at, updated_at)
     select $1, $2, $3, true, $4, $5, $6, $6, $6
     where (select count(*) from webhook_endpoints) < $7
     returning ${COLUMNS}`,
    [endpoint.id, endpoint.url, endpoint.events, endpoint.description, endpoint.secret, endpoint.at, max],
  );
  return row;
}

export async function endpointById(data: DataAccess, id: string): Promise<EndpointRow | undefined> {
  const [row] = await executeBound<EndpointRow>(
    data,
    `select ${COLUMNS} from webhook_endpoints where id = $1`,
    [id],
  );
  return row;
}

export function endpointsPage(
  data: DataAccess,
  after: readonly [string, string] | undefined,
  limit: number,
): Promise<EndpointRow[]> {
  return executeBound<EndpointRow>(
    data,
    `select ${COLUMNS} from webhook_endpoints where ${beforeTimeIdKey('created_at', 'id')}
     order by created_at desc, id desc limit $1`,
    [limit, ...timeIdKeyParams(after)],
  );
}

export interface EndpointChanges {
  url?: string;
  events?: string[];
  enabled?: boolean;
  description?: string;
}

/**
 * Applies the changes given (absent ones leave their field) and answers the row before and after,
 * or undefined when there is none. Enabling a disabled endpoint moves `enabled_since` to `at`.
 */
export async function updateEndpoint(
  tx: DataAccess,
  id: string,
  changes: EndpointChanges,
  at: Date,
): Promise<{ before: EndpointRow; after: EndpointRow } | undefined> {
  const [before] = await executeBound<EndpointRow>(
    tx,
    `select ${COLUMNS} from webhook_endpoints where id = $1 for update`,
    [id],
  );
  if (!before) return undefined;
  const [after] = await executeBound<EndpointRow>(
    tx,
    `update webhook_endpoints set
       url = coalesce($2, url),
       events = coalesce($3, events),
       enabled_since = case when $4 and not enabled then $6 else enabled_since end,
       enabled = coalesce($4, enabled),
       description = coalesce($5, description),
       updated_at = $6
     where id = $1
     returning ${COLUMNS}`,
    [
      id,
      changes.url ?? null,
      changes.events ?? null,
      changes.enabled ?? null,
      changes.description ?? null,
      at,
    ],
  );
  return after && { before, after };
}

/** Deletes the endpoint (its deliveries go with it); the row it was, or undefined. */
export async function deleteEndpoint(tx: DataAccess, id: string): Promise<EndpointRow | undefined> {
  const [row] = await executeBound<EndpointRow>(
    tx,
    `delete from webhook_endpoints where id = $1 returning ${COLUMNS}`,
    [id],
  );
  return row;
}

/**
 * Replaces the secret; the one replaced signs too until `graceUntil` (a second rotation within
 * the grace drops the oldest). False when there is no such endpoint.
 */
export async function rotateSecret(
  tx: DataAccess,
  id: string,
  secret: string,
  graceUntil: Date,
  at: Date,
): Promise<boolean> {
  const rows = await executeBound(
    tx,
    `update webhook_endpoints set previous_secret = secret, previous_secret_until = $3, secret = $2, updated_at = $4
     where id = $1 returning 1`,
    [id, secret, graceUntil, at],
  );
  return rows.length > 0;
}
