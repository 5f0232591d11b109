import { sql } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PublicUserView } from '../../../protocol/users.js';
import { type Role, roles } from '../../platform/auth/access-tokens.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { type User, UserSchema } from './user.entity.js';

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');

/** The user directory: what any signed-in user may see of another. */
export class UsersService {
  async publicView(ctx: Ctx, userId: string): Promise<PublicUserView> {
    callerOf(ctx);
    if (!isId(userId)) throw notFound();
    const user = await ctx.em.findOne(
      UserSchema,
      { id: canonicalId(userId) },
      { fields: ['id', 'username', 'createdAt'] },
    );
    if (!user) throw notFound();
    return { id: user.id, username: user.username, created_at: user.createdAt.toISOString() };
  }
}

/**
 * Adds a new account to the unit of work of `em`, written at its next flush (registration: the
 * flush's unique violations tell a taken username or email).
 */
export function createUser(em: EntityManager, account: User): User {
  return em.create(UserSchema, account);
}

export function findUserById(em: EntityManager, userId: string): Promise<User | null> {
  return em.findOne(UserSchema, { id: userId });
}

/** Deletes the account; the rows of every module that reference it follow their ON DELETE rules. */
export async function deleteUser(em: EntityManager, userId: string): Promise<void> {
  await em.nativeDelete(UserSchema, { id: userId });
}

/** Usernames are unique case-insensitively; this matches the unique index on lower(username). */
export function findUserByUsername(em: EntityManager, username: string) {
  return em.findOne(UserSchema, { [sql.lower('username')]: username.toLowerCase() });
}

/** Operator tooling (`atrium admin grant|revoke`): adds or removes a role by username. */
export async function changeRole(
  em: EntityManager,
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
  const user = await findUserByUsername(em, username);
  if (!user) throw new AppError(ErrorCode.NOT_FOUND, `No user named ${username}.`);
  const next = new Set(user.roles);
  if (change === 'grant') next.add(role as Role);
  else next.delete(role as Role);
  user.roles = roles.filter((r) => next.has(r));
  user.updatedAt = new Date();
  await em.flush();
  return user.roles;
}
