import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { UsersApi } from '../users/index.js';

/** Who writes a record: the signed-in user themself, or a game server naming the user. */
export type Writer = { kind: 'user' } | { kind: 'server'; userId: string };

/**
 * The writer's checks shared by boards and tournaments, in the contract's order after the
 * standings were found: a client may not write authoritative standings (403), then the
 * submission rate (429, users only, boards and tournaments together); a server's user must exist.
 */
export class Writers {
  constructor(
    private readonly users: Pick<UsersApi, 'existingUserIds'>,
    private readonly submitLimiter: RateLimiterAbstract,
  ) {}

  /** The user a submission writes for, after its checks. */
  async submitter(ctx: Ctx, writer: Writer, authoritative: boolean): Promise<string> {
    if (writer.kind === 'server') return this.existing(ctx, writer.userId);
    const userId = this.client(ctx, authoritative);
    await consumeOrThrow(this.submitLimiter, userId, 'Too many leaderboard submissions; wait a moment.');
    return userId;
  }

  /** The user a deletion writes for (no rate). */
  async deleter(ctx: Ctx, writer: Writer, authoritative: boolean): Promise<string> {
    return writer.kind === 'server' ? this.existing(ctx, writer.userId) : this.client(ctx, authoritative);
  }

  /** Gives back a submission the operator refused: a refusal counts nothing. */
  async refund(writer: Writer, userId: string): Promise<void> {
    if (writer.kind === 'user') await this.submitLimiter.reward(userId, 1).catch(() => {});
  }

  private client(ctx: Ctx, authoritative: boolean): string {
    const caller = callerOf(ctx);
    if (authoritative) throw new AppError(ErrorCode.FORBIDDEN, 'Only game servers write these records.');
    return caller.id;
  }

  private async existing(ctx: Ctx, userId: string): Promise<string> {
    const id = isId(userId) ? canonicalId(userId) : undefined;
    const [known] = id ? await this.users.existingUserIds(ctx.data, [id]) : [];
    if (!known) throw new AppError(ErrorCode.NOT_FOUND, `No user ${userId}.`);
    return known;
  }
}
