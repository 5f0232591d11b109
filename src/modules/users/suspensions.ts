import { hasRole } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { type AuditActor, recordAudit } from '../audit/index.js';
import type { User } from './users.repository.js';
import { lockUser, writeSuspension } from './users.repository.js';

/**
 * Account suspensions (docs/admin.md). A suspension is in force from `since` until `until` (null:
 * until lifted); once `until` passes it no longer counts, which login and refresh read against the
 * clock, so nothing has to lift it. Ending the account's sessions is the admin module's part.
 */
export interface Suspension {
  since: Date;
  until: Date | null;
  reason: string;
  /** The account that suspended it; null for the CLI. */
  by: string | null;
}

type SuspensionColumns = Pick<User, 'suspendedAt' | 'suspendedUntil' | 'suspensionReason' | 'suspendedBy'>;

/** The account's suspension if it is in force at `now`, else null. */
export function suspensionInForce(user: SuspensionColumns, now: Date): Suspension | null {
  if (!user.suspendedAt) return null;
  const until = user.suspendedUntil ?? null;
  if (until !== null && until.getTime() <= now.getTime()) return null;
  return {
    since: user.suspendedAt,
    until,
    reason: user.suspensionReason ?? '',
    by: user.suspendedBy ?? null,
  };
}

/** A suspension as the audit log and the API show it. */
export function suspensionJson(suspension: Suspension | null) {
  return suspension === null
    ? null
    : {
        reason: suspension.reason,
        suspended_at: suspension.since.toISOString(),
        suspended_until: suspension.until?.toISOString() ?? null,
        suspended_by: suspension.by,
      };
}

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');

/**
 * Suspends the account (replacing a suspension in force: a new reason or end), in the transaction
 * of `data` with its audit entry; answers the account as it is now. `by` may not suspend
 * themselves, and only an admin (or the CLI) suspends an account holding a moderating role.
 */
export function suspendAccount(
  data: DataAccess,
  userId: string,
  suspension: { reason: string; until: Date | null; at: Date },
  actor: AuditActor & { admin: boolean },
): Promise<User> {
  return transaction(data, async (tx) => {
    const user = await lockUser(tx, { id: userId });
    if (!user) throw noSuchUser();
    if (actor.kind === 'user' && actor.id === user.id)
      throw new AppError(ErrorCode.CONFLICT, 'You cannot suspend your own account.');
    checkRank(user, actor, 'suspend');
    const before = suspensionInForce(user, suspension.at);
    const by = actor.kind === 'user' ? actor.id : null;
    await writeSuspension(tx, user, {
      since: suspension.at,
      until: suspension.until,
      reason: suspension.reason,
      by,
    });
    await recordAudit(tx, {
      actor: auditActor(actor),
      action: 'users.suspend',
      target: { type: 'user', id: user.id },
      before: { suspension: suspensionJson(before) },
      after: { suspension: suspensionJson(suspensionInForce(user, suspension.at)) },
    });
    return user;
  });
}

/**
 * Lifts the account's suspension, with its audit entry. Lifting needs the rank imposing needed, so
 * a moderator cannot undo an admin's suspension of staff. Lifting one that is not in force (never
 * set, lifted, or lapsed) changes nothing and records nothing: the answer is the same either way.
 */
export function liftSuspension(
  data: DataAccess,
  userId: string,
  at: Date,
  actor: AuditActor & { admin: boolean },
): Promise<User> {
  return transaction(data, async (tx) => {
    const user = await lockUser(tx, { id: userId });
    if (!user) throw noSuchUser();
    checkRank(user, actor, 'lift');
    const before = suspensionInForce(user, at);
    if (!before) return user;
    await writeSuspension(tx, user, null);
    await recordAudit(tx, {
      actor: auditActor(actor),
      action: 'users.unsuspend',
      target: { type: 'user', id: user.id },
      before: { suspension: suspensionJson(before) },
      after: { suspension: null },
    });
    return user;
  });
}

/**
 * The one rank rule of suspensions, imposing and lifting alike: only an admin (or the CLI)
 * suspends an account holding a moderating role, or lifts its suspension.
 */
function checkRank(user: User, actor: AuditActor & { admin: boolean }, what: 'suspend' | 'lift'): void {
  if (actor.admin) return;
  if (hasRole(user, 'moderator'))
    throw new AppError(
      ErrorCode.FORBIDDEN,
      what === 'suspend'
        ? 'Only admins can suspend moderators and admins.'
        : "Only admins can lift a moderator's or an admin's suspension.",
    );
}

const auditActor = ({ admin: _admin, ...actor }: AuditActor & { admin: boolean }): AuditActor => actor;
