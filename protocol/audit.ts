import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * The audit log (docs/admin.md): every admin, moderator and operator action appends one entry,
 * written in the transaction of the action itself, and no entry is ever changed or removed.
 */

export const auditActorKindSchema = z.enum(['user', 'cli', 'system', 'extension']);

/** An extension's name (the extensions contract's `name`), the actor id of an extension's entries. */
export const EXTENSION_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** The longest action name, target type and target id an entry holds. */
export const AUDIT_ACTION_MAX = 100;
export const AUDIT_TARGET_TYPE_MAX = 50;
export const AUDIT_TARGET_ID_MAX = 200;

export const auditEntrySchema = z.object({
  id: z.string(),
  at: z.string(),
  /**
   * `user` for an account acting through the API or the console, `cli` for `atrium admin`, `system`
   * for the service itself, `extension` for a loaded extension's `ctx` service (a grant).
   */
  actor_kind: auditActorKindSchema,
  /**
   * The acting account's id, or the extension's name; null for the CLI and the system. The id stays
   * after that account is deleted.
   */
  actor_id: z.string().nullable(),
  /** What was done, as `<domain>.<what>`: `users.suspend`, `users.roles.grant`, `moderation.reports.resolve`, ... */
  action: z.string(),
  /** What it was done to: a type (`user`, `report`, `payout`, ...) and that thing's id. */
  target_type: z.string(),
  target_id: z.string(),
  /** The target's state before and after, as far as the action changed it; null when there was none. */
  before: z.record(z.string(), z.unknown()).nullable(),
  after: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditEntryView = z.infer<typeof auditEntrySchema>;

export const auditList = operation('admin.audit.list', {
  tag: 'admin',
  summary:
    "The audit log, newest first, filtered by actor (an account id, or an extension's name), target (a target id, optionally with target_type) and action (exact name). Admins read every entry; moderators read only their own actions (no actor, or their own id; another actor 403). Others 403 FORBIDDEN.",
  rest: { method: 'GET', path: '/api/admin/audit' },
  request: z
    .object({
      actor: z
        .string()
        .min(1)
        .max(64)
        .describe("An account's id (the entries of its actions) or an extension's name (its entries).")
        .optional(),
      target: text(1, AUDIT_TARGET_ID_MAX).optional(),
      target_type: z
        .string()
        .regex(/^[a-z][a-z0-9_]*$/)
        .max(AUDIT_TARGET_TYPE_MAX)
        .optional(),
      action: z
        .string()
        .regex(/^[a-z][a-z0-9_.]*$/)
        .max(AUDIT_ACTION_MAX)
        .optional(),
      ...listQuery,
    })
    .strict(),
  response: pageOf(auditEntrySchema),
  errors: [401, 403, 422],
});

export const auditOperations = [auditList] as const;
