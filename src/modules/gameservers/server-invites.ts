import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ServerInvitation } from '../../../protocol/gameservers.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { findServer } from './gameservers.repository.js';
import { insertInvitation } from './invitations.repository.js';

export interface ServerInvitesDeps {
  bus: EventBus;
  users: Pick<UsersApi, 'usernamesOf'>;
  social: Pick<SocialApi, 'relationsOf' | 'holdPair'>;
  /**
   * Invitations per inviter and window (SOCIAL_RATE_LIMIT_*), a bucket of its own beside friend
   * requests (`invites`): every kind of invitation may spend from it.
   */
  limiter: RateLimiterAbstract;
}

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');

/**
 * Invitations to a server (docs/gameservers.md, "Server invitations"): its owner invites a user,
 * who may then join it while it lives whatever its access, unless a block stands between them.
 */
export class ServerInvites {
  constructor(private readonly deps: ServerInvitesDeps) {}

  /**
   * Checked in the contract's order, nothing written on refusal: the server (404), its owner
   * (403), the invitee (the caller 422, unknown 404, blocked either way 403), the server live
   * (409), the inviter's rate (429). Inviting again answers the invitation held, and sends nothing.
   */
  async invite(ctx: Ctx, serverId: string, userId: string): Promise<ServerInvitation> {
    const caller = callerOf(ctx);
    const server = isId(serverId) ? await findServer(ctx.data, serverId) : undefined;
    if (!server) throw new AppError(ErrorCode.NOT_FOUND, 'No such game server.');
    if (server.requested_by !== caller.id)
      throw new AppError(ErrorCode.FORBIDDEN, "Only the server's owner invites to it.");
    const inviteeId = canonicalId(userId);
    if (inviteeId === caller.id)
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'user_id: you cannot invite yourself', {
        errors: [{ path: 'user_id', message: 'must be another user' }],
      });
    if (!isId(inviteeId)) throw noSuchUser();
    const users = await this.deps.users.usernamesOf(ctx.data, [caller.id, inviteeId]);
    const owner = users.find((user) => user.id === caller.id);
    if (!owner) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
    if (!users.some((user) => user.id === inviteeId)) throw noSuchUser();
    const outcome = await transaction(ctx.data, async (tx) => {
      // A block of the pair being written is waited for, and one written after waits for this.
      await this.deps.social.holdPair(tx, caller.id, inviteeId);
      if ((await this.deps.social.relationsOf(tx, caller.id, [inviteeId])).get(inviteeId)?.blocked)
        throw new AppError(ErrorCode.FORBIDDEN, 'You cannot invite this user.');
      const live =
        server.status === 'ready' || (server.status === 'starting' && server.ready_deadline > ctx.now());
      if (!live) throw new AppError(ErrorCode.CONFLICT, 'This server has ended.');
      await consumeOrThrow(this.deps.limiter, caller.id, 'Too many invitations; wait before sending more.');
      return insertInvitation(tx, {
        server_id: server.id,
        user_id: inviteeId,
        invited_by: caller.id,
        created_at: ctx.now(),
      });
    }).catch((error: unknown) => {
      // The invitee's account, or the server with its world, was deleted after it was read.
      throw hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)
        ? new AppError(ErrorCode.NOT_FOUND, 'No such user or game server.')
        : error;
    });
    if (outcome.created)
      await this.deps.bus.publishCommitted(
        userTopic(inviteeId),
        {
          t: 'server.invite',
          d: {
            server_id: server.id,
            world_id: server.world_id,
            from: { user_id: owner.id, username: owner.username },
          },
        },
        ctx.log,
      );
    const { invitation } = outcome;
    return { ...invitation, created_at: invitation.created_at.toISOString() };
  }
}
