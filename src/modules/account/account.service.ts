import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { Me } from '../../../protocol/users.js';
import { batchedStatement } from '../../platform/batcher.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { Outbox } from '../../platform/outbox.js';
import type { AuthApi } from '../auth/index.js';
import type { PresenceApi } from '../presence/index.js';
import type { AccountRow, UsersApi } from '../users/index.js';

export interface AccountDeps {
  sessions: Pick<AuthApi, 'revokeAllSessions' | 'verifyPassword'>;
  presence: Pick<PresenceApi, 'unflushed'>;
  accounts: Pick<UsersApi, 'findAccounts' | 'findUserById' | 'deleteUser'>;
  /** How many statements reading accounts may run at once; reads made meanwhile share one. */
  readConcurrency: number;
  /** Told how many reads each statement served (a metric). */
  observeReadBatch?: (size: number) => void;
  /** `user.deleted` is recorded with the deletion, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'record'>;
}

const USER_DELETED = 'user.deleted';

/**
 * Work another module runs inside the transaction that deletes an account, before its row goes:
 * for rows that must change otherwise than by the schema's cascades (a party's leadership passes
 * on). What it answers runs once the deletion committed (the events of that change).
 */
export type AccountDeletionListener = (
  ctx: Ctx,
  tx: DataAccess,
  userId: string,
) => Promise<(() => Promise<void>) | undefined>;

/** The most accounts one statement reads. */
const ACCOUNTS_PER_STATEMENT = 100;

const vanished = () => new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');

/** The signed-in user's own account: reading it and deleting it. */
export class AccountService {
  private readonly deletionListeners: AccountDeletionListener[] = [];
  /**
   * GET /api/users/me runs at the rate clients poll it, so under load the reads share statements
   * (src/platform/batcher.ts): a pooled connection is held per statement for its round trip and
   * the wait until the event loop reads the answer, which limited a node more than Postgres did.
   */
  private readonly readAccount: (ctx: Ctx, userId: string) => Promise<AccountRow | undefined>;

  constructor(private readonly deps: AccountDeps) {
    this.readAccount = batchedStatement(deps.accounts.findAccounts, {
      maxSize: ACCOUNTS_PER_STATEMENT,
      maxInFlight: deps.readConcurrency,
      observe: deps.observeReadBatch,
    });
  }

  onDeletion(listener: AccountDeletionListener): void {
    this.deletionListeners.push(listener);
  }

  async me(ctx: Ctx): Promise<Me> {
    const caller = callerOf(ctx);
    const [user, unflushed] = await Promise.all([
      this.readAccount(ctx, caller.id),
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
   * table), and the user's access tokens stop working at once. `user.deleted` and the work of the
   * deletion listeners commit with the deletion (the only path that deletes an account).
   */
  async deleteAccount(ctx: Ctx, password: string): Promise<void> {
    const caller = callerOf(ctx);
    const user = await this.deps.accounts.findUserById(ctx.data, caller.id);
    if (!user) throw vanished();
    if (!(await this.deps.sessions.verifyPassword(user.passwordHash, password))) {
      throw new AppError(ErrorCode.PASSWORD_INCORRECT, 'The password is wrong.');
    }
    await this.deps.sessions.revokeAllSessions(ctx, user.id);
    const recorded = this.deps.outbox.hasConsumers(USER_DELETED);
    if (!recorded && this.deletionListeners.length === 0) {
      await this.deps.accounts.deleteUser(ctx.data, user.id);
      return;
    }
    const afterCommit = await transaction(ctx.data, async (tx) => {
      const done: (() => Promise<void>)[] = [];
      for (const listener of this.deletionListeners) {
        const after = await listener(ctx, tx, user.id);
        if (after) done.push(after);
      }
      // A deletion racing this one may have deleted it first: that one records the event.
      if (!(await this.deps.accounts.deleteUser(tx, user.id))) return [];
      if (recorded) {
        const event: DomainEventData[typeof USER_DELETED] = { user_id: user.id };
        await this.deps.outbox.record(tx, USER_DELETED, event);
      }
      return done;
    });
    for (const after of afterCommit) await after();
  }
}
