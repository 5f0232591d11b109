import type { Database } from '../../src/platform/db.js';
import { queryRows } from '../helpers/database.js';

/** An audit entry as stored, without its id and time. */
export interface StoredAuditEntry {
  actor_kind: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: unknown;
  after: unknown;
}

/** The stored audit entries about one target, oldest first. */
export function auditEntriesOf(db: Database, targetId: string): Promise<StoredAuditEntry[]> {
  return queryRows<StoredAuditEntry>(
    db,
    `select actor_kind, actor_id, action, target_type, target_id, before, after
     from audit_log where target_id = ? order by at, id`,
    [targetId],
  );
}
