import { sql } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Me, PublicUserView } from '../../../protocol/users.js';
import { type Role, roles } from '../../platform/auth/access-tokens.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { AuthService } from '../auth/auth.service.js';
import { verifyPassword } from '../auth/password.js';
import type { PresenceService } from '../presence/presence.service.js';
import { UserSchema } from './user.entity.js';

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');

export class UsersService {
  constructor(
    private readonly auth: AuthService,
    private readonly presence: PresenceService,
  ) {}

  async me(ctx: Ctx): Promise<Me> {
    const caller = callerOf(ctx);
    const [user, sighting] = await Promise.all([
      ctx.em.findOne(UserSchema, { id: caller.id }),
      this.presence.latestSighting(caller.id),
    ]);
    // A valid token for a vanished account means the account was deleted moments ago.
    if (!user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
    // last_seen_at is written in coalesced batches, so a sighting not yet flushed may be newer:
    // the caller reads its own heartbeat at once.
    const lastSeen =
      sighting && (!user.lastSeenAt || sighting > user.lastSeenAt) ? sighting : user.lastSeenAt;
    return {
      id: user.id,
      username: user.username,
      created_at: user.createdAt.toISOString(),
      last_seen_at: lastSeen?.toISOString() ?? null,
      status_message: user.statusMessage,
      roles: user.roles,
    };
  }

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

  /**
   * Deletes the caller's account after re-checking the password. Rows the user owns go with it
   * through the schema's ON DELETE rules (CASCADE or SET NULL, as the specification assigns each
   * table), and the user's access tokens stop working at once.
   */
  async deleteAccount(ctx: Ctx, password: string): Promise<void> {
    const caller = callerOf(ctx);
    const user = await ctx.em.findOne(UserSchema, { id: caller.id });
    if (!user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
    if (!(await verifyPassword(user.passwordHash, password))) {
      throw new AppError(ErrorCode.PASSWORD_INCORRECT, 'The password is wrong.');
    }
    await this.auth.revokeAllSessions(ctx, user.id);
    await ctx.em.nativeDelete(UserSchema, { id: user.id });
  }
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
