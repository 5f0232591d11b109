import type { Group, GroupMember, GroupRole } from '../../../protocol/groups.js';
import type { Ctx } from '../../platform/context.js';
import { timeOfKey } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { type GroupRow, lockGroup, type MemberRow, rolesIn } from './groups.repository.js';

/** What both group services share: views of rows, the refusals, and the locked-group step. */

export const toGroup = (row: GroupRow): Group => ({
  id: row.id,
  name: row.name,
  description: row.description,
  owner_id: row.owner_id,
  join_policy: row.join_policy,
  member_count: row.member_count,
  created_at: new Date(row.created_at).toISOString(),
});

export const toMember = (row: MemberRow): GroupMember => ({
  user_id: row.user_id,
  username: row.username,
  role: row.role,
  joined_at: timeOfKey(row.joined_key),
});

export const noSuchGroup = () => new AppError(ErrorCode.NOT_FOUND, 'No such group.');
export const notAMember = () => new AppError(ErrorCode.NOT_FOUND, 'This user is not a member of the group.');
export const forbidden = (detail: string) => new AppError(ErrorCode.FORBIDDEN, detail);

/** The canonical id of a group; an id that cannot name one answers 404 as an unknown one does. */
export function groupIdOf(groupId: string): string {
  if (!isId(groupId)) throw noSuchGroup();
  return canonicalId(groupId);
}

/** The canonical id of a user named in a path; one that cannot name a user is not a member (404). */
export function memberIdOf(userId: string): string {
  if (!isId(userId)) throw notAMember();
  return canonicalId(userId);
}

/**
 * The refusal of `requireRole(ctx, 'moderator', ...)` for group administration (docs/groups.md,
 * "Administration"): moderators and admins of the service (roles of the access token, not of a
 * group) list, clear and delete any group.
 */
export const GROUP_STAFF_ONLY = 'Only moderators and admins administer groups.';

/** Roles that manage the roster and join requests. */
export const isManager = (role: GroupRole | undefined): boolean => role === 'owner' || role === 'admin';

/** Refuses (403) a caller who is not the group's owner or an admin: "Only ... owner and admins <what>." */
export async function requireManager(
  data: DataAccess,
  groupId: string,
  me: string,
  what: string,
): Promise<void> {
  if (!isManager((await rolesIn(data, groupId, [me])).get(me)))
    throw forbidden(`Only the group's owner and admins ${what}.`);
}

/**
 * Runs `change` in a transaction holding the group's row lock (404 when there is no such group):
 * every roster and ownership change goes through here, so the roles and counts it reads stay
 * true until it commits, and two changes of one group take turns. `first` takes a user's quota
 * lock before the group's: every path takes them in that order, so none waits on another in a
 * circle.
 */
export function inLockedGroup<T>(
  ctx: Ctx,
  groupId: string,
  change: (data: DataAccess, group: GroupRow) => Promise<T>,
  first?: (data: DataAccess) => Promise<void>,
): Promise<T> {
  const id = groupIdOf(groupId);
  return transaction(ctx.data, async (tx) => {
    await first?.(tx);
    const group = await lockGroup(tx, id);
    if (!group) throw noSuchGroup();
    return change(tx, group);
  });
}
