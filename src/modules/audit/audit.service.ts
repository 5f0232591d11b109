import { type AuditEntryView, EXTENSION_NAME } from '../../../protocol/audit.js';
import { type Ctx, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import { type AuditEntry, type AuditRow, auditPage, insertAuditEntry } from './audit.repository.js';

export interface AuditQuery {
  actor?: string | undefined;
  target?: string | undefined;
  target_type?: string | undefined;
  action?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

const toView = (row: AuditRow): AuditEntryView => ({
  id: row.id,
  at: new Date(row.at).toISOString(),
  actor_kind: row.actor_kind,
  actor_id: row.actor_id,
  action: row.action,
  target_type: row.target_type,
  target_id: row.target_id,
  before: row.before,
  after: row.after,
});

/**
 * The `actor_id` an `actor` filter looks for: an account's id in its one spelling, or an
 * extension's name as it is. Both are equality on the one column and its index.
 */
function actorFilter(actor: string): string {
  if (isId(actor)) return canonicalId(actor);
  if (EXTENSION_NAME.test(actor)) return actor;
  const message = 'must be an account id or an extension name';
  throw new AppError(ErrorCode.VALIDATION_FAILED, `actor: ${message}`, {
    errors: [{ path: 'actor', message }],
  });
}

/**
 * Appends an entry through `data`: inside the caller's transaction when there is one, so the
 * entry and the action it records commit (or roll back) together.
 */
export async function recordAudit(data: DataAccess, entry: AuditEntry): Promise<void> {
  await insertAuditEntry(data, newId(), entry);
}

/**
 * Reading the log. Admins read all of it; a moderator reads the entries of their own actions
 * (what they did is theirs to review, what others did is not), so a moderator's query without
 * `actor` is narrowed to themselves and one naming someone else is refused.
 */
export class AuditService {
  async list(ctx: Ctx, query: AuditQuery) {
    const caller = requireRole(ctx, 'moderator', 'Only admins and moderators can read the audit log.');
    const admin = hasRole(caller, 'admin');
    const actor = query.actor === undefined ? undefined : actorFilter(query.actor);
    if (!admin && actor !== undefined && actor !== caller.id)
      throw new AppError(ErrorCode.FORBIDDEN, "Moderators read only their own actions' entries.");
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await auditPage(
      ctx.data,
      {
        actorId: admin ? actor : caller.id,
        targetId: query.target,
        targetType: query.target_type,
        action: query.action,
      },
      { after, limit: query.limit + 1 },
    );
    return pageFrom(rows, query.limit, toView, (row) => [row.at_key, row.id]);
  }
}
