import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { PresenceApi } from '../presence/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { serverOfLatestReservation } from './reservations.repository.js';
import type { WorldJoinAnswer, WorldJoins } from './world-join.js';

export interface FriendJoinDeps {
  joins: WorldJoins;
  worlds: Pick<WorldsApi, 'readable'>;
  users: Pick<UsersApi, 'existingUserIds'>;
  social: Pick<SocialApi, 'relationsOf'>;
  presence: Pick<PresenceApi, 'online' | 'visibleTo'>;
}

const notInWorld = () =>
  new AppError(ErrorCode.NOT_IN_WORLD, 'This friend is offline, or on no starting or ready game server.');
const restricted = () =>
  new AppError(ErrorCode.INSTANCE_RESTRICTED, "You may not join this friend's game server.");

/**
 * Joining a friend (docs/gameservers.md, "Joining a friend"): the caller goes to the server of the
 * friend's latest reservation, while that server is starting or ready and the friend is online,
 * as a join naming that server would, with the refusals worded for a friend. Checked in the
 * contract's order; each refusal comes before anything is written.
 */
export async function joinFriend(deps: FriendJoinDeps, ctx: Ctx, userId: string): Promise<WorldJoinAnswer> {
  const caller = callerOf(ctx);
  const friendId = canonicalId(userId);
  if (friendId === caller.id)
    throw new AppError(ErrorCode.VALIDATION_FAILED, 'user_id: you cannot join yourself', {
      errors: [{ path: 'user_id', message: 'must be another user' }],
    });
  if (!isId(friendId) || (await deps.users.existingUserIds(ctx.data, [friendId])).length === 0)
    throw new AppError(ErrorCode.NOT_FOUND, 'No such user.');
  const relation = (await deps.social.relationsOf(ctx.data, caller.id, [friendId])).get(friendId);
  if (!relation?.friends || relation.blocked || !(await deps.presence.visibleTo(ctx, friendId)))
    throw new AppError(ErrorCode.FORBIDDEN, 'You may join only friends who let you see them online.');
  if (!(await deps.presence.online([friendId])).has(friendId)) throw notInWorld();
  const server = await serverOfLatestReservation(ctx.data, friendId);
  const live =
    server?.status === 'ready' || (server?.status === 'starting' && server.ready_deadline > ctx.now());
  if (!server || !live) throw notInWorld();
  const world = await deps.worlds.readable(ctx, server.world_id).catch((error: unknown) => {
    // A world the caller may not read is not revealed as missing here: the friend is in it.
    throw error instanceof AppError && error.code === ErrorCode.NOT_FOUND ? restricted() : error;
  });
  // The server may end before the join's turn: the friend is then on no server.
  return deps.joins.join(ctx, caller.id, world, { serverId: server.id }, { noServer: notInWorld });
}
