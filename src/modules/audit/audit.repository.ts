import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { canonicalId } from '../../platform/ids.js';
import { namedSql } from '../../platform/named-sql.js';

/** The SQL of the audit log (table `audit_log` of migrations 0023 and 0032); rows are only ever inserted. */

/**
 * Who acted: an account, the `atrium admin` CLI, the service itself, or an extension (by its name,
 * for what its `ctx` services do that only an admin could).
 */
export type AuditActor =
  | { kind: 'user'; id: string }
  | { kind: 'cli' }
  | { kind: 'system' }
  | { kind: 'extension'; name: string };

/**
 * What `actor_id` holds for an actor: an account's id (its one spelling: the column is text, so it
 * would not match a filter otherwise) or an extension's name; null for the others.
 */
function actorIdOf(actor: AuditActor): string | null {
  if (actor.kind === 'user') return canonicalId(actor.id);
  return actor.kind === 'extension' ? actor.name : null;
}

/**
 * One action to record. `action` is `<domain>.<what>` (`users.suspend`); `target` names what it
 * was done to; `before` and `after` hold the target's state the action changed, as plain JSON
 * objects (omitted: null).
 */
export interface AuditEntry {
  actor: AuditActor;
  action: string;
  target: { type: string; id: string };
  before?: Record<string, unknown> | null | undefined;
  after?: Record<string, unknown> | null | undefined;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor_kind: AuditActor['kind'];
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** The row's keyset position: `at` to the microsecond. */
  at_key: string;
}

interface AuditParams {
  id: string;
  actorKind: AuditActor['kind'];
  actorId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  before: string | null;
  after: string | null;
}

const INSERT_AUDIT_ENTRY = namedSql<AuditParams>(
  `insert into audit_log (id, actor_kind, actor_id, action, target_type, target_id, before, after)
   values (:id, :actorKind, :actorId, :action, :targetType, :targetId, :before::jsonb, :after::jsonb)`,
);

export async function insertAuditEntry(data: DataAccess, id: string, entry: AuditEntry): Promise<void> {
  await executeNamed<unknown, AuditParams>(data, INSERT_AUDIT_ENTRY, {
    id,
    actorKind: entry.actor.kind,
    actorId: actorIdOf(entry.actor),
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    before: entry.before == null ? null : JSON.stringify(entry.before),
    after: entry.after == null ? null : JSON.stringify(entry.after),
  });
}

export interface AuditFilter {
  /** An account's id (in its lower-case spelling) or an extension's name: `actor_id` holds either. */
  actorId?: string | undefined;
  targetId?: string | undefined;
  targetType?: string | undefined;
  action?: string | undefined;
}

/**
 * The filters as conditions on parameters $4 onwards ($1 is the limit, $2 and $3 the key). The statement's text depends only on which
 * filters are present (a handful of fixed texts, each prepared once), so each present filter is
 * an index condition rather than a `$n is null or ...` a generic plan cannot use.
 */
function filterSql(filter: AuditFilter): { conditions: string[]; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const add = (sql: (n: number) => string, value: unknown) => {
    params.push(value);
    conditions.push(sql(3 + params.length));
  };
  if (filter.actorId !== undefined) add((n) => `actor_id = $${n}`, filter.actorId);
  if (filter.targetId !== undefined) add((n) => `target_id = $${n}`, filter.targetId);
  if (filter.targetType !== undefined) add((n) => `target_type = $${n}`, filter.targetType);
  if (filter.action !== undefined) add((n) => `action = $${n}`, filter.action);
  return { conditions, params };
}

/** A page of entries newest first: a range scan of the index of the most selective filter. */
export function auditPage(
  data: DataAccess,
  filter: AuditFilter,
  page: { after: readonly [string, string] | undefined; limit: number },
): Promise<AuditRow[]> {
  const { conditions, params } = filterSql(filter);
  return executeBound<AuditRow>(
    data,
    `select id, at, actor_kind, actor_id, action, target_type, target_id, before, after,
            ${timeKeySql('at')} as at_key
     from audit_log
     where ${[beforeTimeIdKey('at', 'id'), ...conditions].join(' and ')}
     order by at desc, id desc
     limit $1`,
    [page.limit, ...timeIdKeyParams(page.after), ...params],
  );
}
