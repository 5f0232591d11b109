import type { PublicUserView } from '../../../protocol/users.js';
import { type Role, roles } from '../../platform/auth/access-tokens.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { type AuditActor, recordAudit } from '../audit/index.js';
import { findPublicUser, lockUser, type User, writeRoles } from './users.repository.js';

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');

/** The user directory: what any signed-in user may see of another. */
export class UsersService {
  async publicView(ctx: Ctx, userId: string): Promise<PublicUserView> {
    callerOf(ctx);
    if (!isId(userId)) throw notFound();
    const user = await findPublicUser(ctx.data, canonicalId(userId));
    if (!user) throw notFound();
    return { id: user.id, username: user.username, created_at: user.createdAt.toISOString() };
  }
}

/**
 * Adds or removes a role by username: the CLI's `atrium admin grant|revoke` (actor `cli`) and the
 * test helpers. The account's row is locked, changed and audited in one transaction.
 */
export async function changeRole(
  data: DataAccess,
  username: string,
  role: string,
  change: 'grant' | 'revoke',
  actor: AuditActor = { kind: 'cli' },
): Promise<Role[]> {
  const known = checkedRole(role, change);
  return transaction(data, async (tx) => {
    const user = await lockUser(tx, { username });
    if (!user) throw new AppError(ErrorCode.NOT_FOUND, `No user named ${username}.`);
    return applyRoleChange(tx, user, known, change, actor);
  });
}

/** changeRole for the account of this id (the admin routes); NOT_FOUND when there is none. */
export async function changeRoleById(
  data: DataAccess,
  userId: string,
  role: string,
  change: 'grant' | 'revoke',
  actor: AuditActor,
): Promise<Role[]> {
  const known = checkedRole(role, change);
  return transaction(data, async (tx) => {
    const user = await lockUser(tx, { id: userId });
    if (!user) throw new AppError(ErrorCode.NOT_FOUND, 'No such user.');
    return applyRoleChange(tx, user, known, change, actor);
  });
}

/** The role, if it is one an account may be given (grant) or lose (revoke). */
export function checkedRole(role: string, change: 'grant' | 'revoke'): Role {
  if (!(roles as readonly string[]).includes(role)) {
    throw new AppError(ErrorCode.VALIDATION_FAILED, `Unknown role ${role}; roles are ${roles.join(', ')}.`);
  }
  if (change === 'revoke' && role === 'user') {
    throw new AppError(ErrorCode.VALIDATION_FAILED, 'Every account keeps the user role.');
  }
  return role as Role;
}

/**
 * The one rule of role changes, for the CLI and the admin routes alike: the account (locked in
 * the transaction of `tx`) gains or loses the role, and the audit log records it with the roles
 * before and after, in the same transaction. An account acting on itself cannot give up `admin`,
 * so the last admin cannot lock everyone out; the CLI, run by the operator, can.
 */
export async function applyRoleChange(
  tx: DataAccess,
  user: User,
  role: Role,
  change: 'grant' | 'revoke',
  actor: AuditActor,
): Promise<Role[]> {
  if (change === 'revoke' && role === 'admin' && actor.kind === 'user' && actor.id === user.id)
    throw new AppError(ErrorCode.CONFLICT, 'You cannot remove your own admin role; another admin can.');
  const before = [...user.roles];
  const next = new Set(user.roles);
  if (change === 'grant') next.add(role);
  else next.delete(role);
  const after = roles.filter((r) => next.has(r));
  await writeRoles(tx, user, after, new Date());
  await recordAudit(tx, {
    actor,
    action: `users.roles.${change}`,
    target: { type: 'user', id: user.id },
    before: { roles: before },
    after: { roles: after, role },
  });
  return after;
}
