import type { Me } from '../../../protocol/users.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { AuthApi } from '../auth/index.js';
import type { PresenceApi } from '../presence/index.js';
import { findAccount, UserSchema } from '../users/index.js';

export interface AccountDeps {
  sessions: Pick<AuthApi, 'revokeAllSessions' | 'verifyPassword'>;
  presence: Pick<PresenceApi, 'unflushed'>;
}

const vanished = () => new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');

/** The signed-in user's own account: reading it and deleting it. */
export class AccountService {
  constructor(private readonly deps: AccountDeps) {}

  async me(ctx: Ctx): Promise<Me> {
    const caller = callerOf(ctx);
    const [user, unflushed] = await Promise.all([
      findAccount(ctx.em, caller.id),
      this.deps.presence.unflushed(caller.id),
    ]);
    // A valid token for a vanished account means the account was deleted moments ago.
    if (!user) throw vanished();
    // last_seen_at and status messages are written in coalesced batches, so what is not flushed
    // yet may be newer: the caller reads its own heartbeat and status at once.
    const sighting = unflushed.lastSeen;
    const lastSeen =
      sighting && (!user.last_seen_at || sighting > user.last_seen_at) ? sighting : user.last_seen_at;
    return {
      id: user.id,
      username: user.username,
      created_at: user.created_at.toISOString(),
      last_seen_at: lastSeen?.toISOString() ?? null,
      status_message: unflushed.statusMessage ? unflushed.statusMessage.message : user.status_message,
      roles: user.roles,
    };
  }

  /**
   * Deletes the caller's account after re-checking the password. Rows the user owns go with it
   * through the schema's ON DELETE rules (CASCADE or SET NULL, as the specification assigns each
   * table), and the user's access tokens stop working at once.
   */
  async deleteAccount(ctx: Ctx, password: string): Promise<void> {
    const caller = callerOf(ctx);
    const user = await ctx.em.findOne(UserSchema, { id: caller.id });
    if (!user) throw vanished();
    if (!(await this.deps.sessions.verifyPassword(user.passwordHash, password))) {
      throw new AppError(ErrorCode.PASSWORD_INCORRECT, 'The password is wrong.');
    }
    await this.deps.sessions.revokeAllSessions(ctx, user.id);
    await ctx.em.nativeDelete(UserSchema, { id: user.id });
  }
}
