import { auditList } from '../../../protocol/audit.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { AuditService, recordAudit } from './audit.service.js';

export type { AuditActor, AuditEntry } from './audit.repository.js';
/** Appends an entry in the caller's transaction; for callers outside the module list (the CLI). */
export { recordAudit } from './audit.service.js';

/** What other modules use of the audit log: they record, only this module reads. */
export interface AuditApi {
  /**
   * Appends one entry through `data`, the handle the action itself used (its transaction's), so
   * the entry commits with the action or not at all.
   */
  record: typeof recordAudit;
}

/** The append-only audit log of admin, moderator and operator actions (docs/admin.md). */
export const auditModule = defineModule({
  name: 'audit',
  tables: ['audit_log'],
  needs: [],
  setup() {
    const audit = new AuditService();
    const api: AuditApi = { record: recordAudit };
    return {
      api,
      operations: [serve(auditList, (ctx, query) => audit.list(ctx, query))],
    };
  },
});
