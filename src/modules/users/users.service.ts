import type { PublicUserView } from '../../../protocol/users.js';
import { type Role, roles } from '../../platform/auth/access-tokens.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { findPublicUser, findUserByUsername, writeRoles } from './users.repository.js';

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

/** Operator tooling (`atrium admin grant|revoke`): adds or removes a role by username. */
export async function changeRole(
  data: DataAccess,
  username: string,
  role: string,
  change: 'grant' | 'revoke',
): Promise<Role[]> {
  if (!(roles as readonly string[]).includes(role)) {
    throw new AppError(ErrorCode.VALIDATION_FAILED, `Unknown role ${role}; roles are ${roles.join(', ')}.`);
  }
  if (change === 'revoke' && role === 'user') {
    throw new AppError(ErrorCode.VALIDATION_FAILED, 'Every account keeps the user role.');
  }
  const user = await findUserByUsername(data, username);
  if (!user) throw new AppError(ErrorCode.NOT_FOUND, `No user named ${username}.`);
  const next = new Set(user.roles);
  if (change === 'grant') next.add(role as Role);
  else next.delete(role as Role);
  await writeRoles(
    data,
    user,
    roles.filter((r) => next.has(r)),
    new Date(),
  );
  return user.roles;
}
