import type { GroupJoinPolicy, GroupRole } from '../../../protocol/groups.js';
import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, lockNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { usernameSql } from '../users/index.js';

/** The SQL of groups, their rosters and join requests (migration 0012). */

export interface GroupRow {
  id: string;
  name: string;
  description: string;
  join_policy: GroupJoinPolicy;
  owner_id: string | null;
  member_count: number;
  created_at: Date;
}

export interface MemberRow {
  user_id: string;
  username: string;
  role: GroupRole;
  /**
   * joined_at to the microsecond, as text (`timeKeySql`): the row's keyset position, and its time
   * (`timeOfKey`) without parsing a Date per row.
   */
  joined_key: string;
}

const GROUP_COLUMNS = 'id, name, description, join_policy, owner_id, member_count, created_at';
const MEMBER_COLUMNS = `user_id, ${usernameSql('user_id')} as username, role::text as role, ${timeKeySql('joined_at')} as joined_key`;
/** The name as the unique index and the name order see it (migration 0012). */
const NAME_KEY = '(lower(name) collate "C")';

/**
 * SQL that is true when `userIdSql` is a member of `groupIdSql` (parameters or columns of uuids):
 * for statements of other modules that write only for members (group chat), in one round trip.
 */
export const groupMemberSql = (groupIdSql: string, userIdSql: string) =>
  `exists (select 1 from group_members where group_id = ${groupIdSql} and user_id = ${userIdSql})`;

/**
 * Makes a user's group creations, and separately their joins and requests, take turns, so the
 * count read after the lock and the insert are one step and the quota holds under concurrency.
 */
export const lockOwnedGroups = (data: DataAccess, userId: string) =>
  lockNamed(data, `groups:owner:${userId}`);
export const lockMemberships = (data: DataAccess, userId: string) =>
  lockNamed(data, `groups:member:${userId}`);

export async function countOwnedBy(data: DataAccess, userId: string): Promise<number> {
  const [row] = await executeBound<{ n: number }>(
    data,
    'select count(*)::int as n from groups where owner_id = $1',
    [userId],
  );
  return row?.n ?? 0;
}

/** Memberships and pending join requests of a user: what GROUP_MAX_MEMBERSHIPS_PER_USER bounds. */
export async function countMembershipsOf(data: DataAccess, userId: string): Promise<number> {
  const [row] = await executeBound<{ n: number }>(
    data,
    `select ((select count(*) from group_members where user_id = $1)
           + (select count(*) from group_join_requests where user_id = $1))::int as n`,
    [userId],
  );
  return row?.n ?? 0;
}

interface NewGroup {
  id: string;
  name: string;
  description: string;
  joinPolicy: GroupJoinPolicy;
  ownerId: string;
  at: Date;
}

const INSERT_GROUP = namedSql<NewGroup>(
  `insert into groups (id, name, description, join_policy, owner_id, created_at, updated_at)
   values (:id, :name, :description, :joinPolicy, :ownerId, :at, :at)`,
);

export async function insertGroup(data: DataAccess, group: NewGroup): Promise<void> {
  await executeNamed(data, INSERT_GROUP, group);
}

export async function groupById(data: DataAccess, groupId: string): Promise<GroupRow | undefined> {
  const [row] = await executeBound<GroupRow>(data, `select ${GROUP_COLUMNS} from groups where id = $1`, [
    groupId,
  ]);
  return row;
}

/**
 * The group, its row locked until the transaction ends: every change of a group's roster or
 * ownership takes this lock first, so the rules it checks cannot change under it.
 */
export async function lockGroup(data: DataAccess, groupId: string): Promise<GroupRow | undefined> {
  const [row] = await executeBound<GroupRow>(
    data,
    `select ${GROUP_COLUMNS} from groups where id = $1 for update`,
    [groupId],
  );
  return row;
}

export async function updateGroup(
  data: DataAccess,
  groupId: string,
  change: {
    name?: string | undefined;
    description?: string | undefined;
    joinPolicy?: GroupJoinPolicy | undefined;
    at: Date;
  },
): Promise<GroupRow | undefined> {
  const [row] = await executeBound<GroupRow>(
    data,
    `update groups set name = coalesce($2, name), description = coalesce($3, description),
       join_policy = coalesce($4, join_policy), updated_at = $5
     where id = $1 returning ${GROUP_COLUMNS}`,
    [groupId, change.name ?? null, change.description ?? null, change.joinPolicy ?? null, change.at],
  );
  return row;
}

export async function setOwner(
  data: DataAccess,
  groupId: string,
  ownerId: string,
  at: Date,
): Promise<GroupRow> {
  const [row] = await executeBound<GroupRow>(
    data,
    `update groups set owner_id = $2, updated_at = $3 where id = $1 returning ${GROUP_COLUMNS}`,
    [groupId, ownerId, at],
  );
  if (!row) throw new Error('the locked group is gone');
  return row;
}

export async function deleteGroup(data: DataAccess, groupId: string): Promise<void> {
  await executeBound(data, 'delete from groups where id = $1', [groupId]);
}

/** The roles of these users in the group; users who are not members are absent. */
export async function rolesIn(
  data: DataAccess,
  groupId: string,
  userIds: readonly string[],
): Promise<Map<string, GroupRole>> {
  const rows = await executeBound<{ user_id: string; role: GroupRole }>(
    data,
    'select user_id, role::text as role from group_members where group_id = $1 and user_id = any($2::uuid[])',
    [groupId, userIds],
  );
  return new Map(rows.map((row) => [row.user_id, row.role]));
}

export async function insertMember(
  data: DataAccess,
  member: { groupId: string; userId: string; role: GroupRole; at: Date },
): Promise<MemberRow> {
  const [row] = await executeBound<MemberRow>(
    data,
    `insert into group_members (group_id, user_id, role, joined_at) values ($1, $2, $3, $4)
     returning ${MEMBER_COLUMNS}`,
    [member.groupId, member.userId, member.role, member.at],
  );
  if (!row) throw new Error('insert returned no row');
  return row;
}

export async function setRole(
  data: DataAccess,
  groupId: string,
  userId: string,
  role: GroupRole,
): Promise<MemberRow> {
  const [row] = await executeBound<MemberRow>(
    data,
    `update group_members set role = $3 where group_id = $1 and user_id = $2 returning ${MEMBER_COLUMNS}`,
    [groupId, userId, role],
  );
  if (!row) throw new Error('the member checked under the group lock is gone');
  return row;
}

export async function deleteMember(data: DataAccess, groupId: string, userId: string): Promise<boolean> {
  const rows = await executeBound(
    data,
    'delete from group_members where group_id = $1 and user_id = $2 returning user_id',
    [groupId, userId],
  );
  return rows.length > 0;
}

/**
 * Stores a pending request and answers the requester with their username (for the managers'
 * notifications, read in the same statement), or undefined when their request is pending already.
 */
export async function insertRequest(
  data: DataAccess,
  groupId: string,
  userId: string,
  at: Date,
): Promise<{ id: string; username: string } | undefined> {
  const [row] = await executeBound<{ id: string; username: string }>(
    data,
    `insert into group_join_requests (group_id, user_id, created_at) values ($1, $2, $3)
     on conflict do nothing returning user_id as id, ${usernameSql('user_id')} as username`,
    [groupId, userId, at],
  );
  return row;
}

export async function deleteRequest(data: DataAccess, groupId: string, userId: string): Promise<boolean> {
  const rows = await executeBound(
    data,
    'delete from group_join_requests where group_id = $1 and user_id = $2 returning user_id',
    [groupId, userId],
  );
  return rows.length > 0;
}

/** The user ids of the owner and admins: who is told of join requests. */
export async function managersOf(data: DataAccess, groupId: string): Promise<string[]> {
  const rows = await executeBound<{ user_id: string }>(
    data,
    `select user_id from group_members where group_id = $1 and role in ('owner', 'admin')`,
    [groupId],
  );
  return rows.map((row) => row.user_id);
}

/** The admin who joined first (ties by id): who may claim an ownerless group. */
export async function longestStandingAdmin(data: DataAccess, groupId: string): Promise<string | undefined> {
  const [row] = await executeBound<{ user_id: string }>(
    data,
    `select user_id from group_members where group_id = $1 and role = 'admin'
     order by joined_at, user_id limit 1`,
    [groupId],
  );
  return row?.user_id;
}

export { GROUP_COLUMNS, MEMBER_COLUMNS, NAME_KEY };
