import type { GroupRole } from '../../../protocol/groups.js';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { usernameSql } from '../users/index.js';
import {
  GROUP_COLUMNS,
  type GroupRow,
  MEMBER_COLUMNS,
  type MemberRow,
  NAME_KEY,
} from './groups.repository.js';

/**
 * The keyset pages of groups (migration 0012's indexes serve each one in its order). Ascending
 * keysets compare a first page with the smallest key there is, so the comparison stays an index
 * condition on a generic plan (docs/modules.md, "Keep keyset conditions index conditions").
 */

const MIN_UUID = '00000000-0000-0000-0000-000000000000';

export type RosterKey = readonly [role: GroupRole, joinedKey: string, userId: string];

interface RosterParams {
  groupId: string;
  role: GroupRole | null;
  afterRole: GroupRole | null;
  afterJoined: string | null;
  afterUser: string | null;
  limit: number;
}

const ROSTER_PAGE = namedSql<RosterParams>(
  `select ${MEMBER_COLUMNS} from group_members
   where group_id = :groupId
     and role >= coalesce(:role::group_role, 'owner') and role <= coalesce(:role::group_role, 'member')
     and (role, joined_at, user_id) > (coalesce(:afterRole::group_role, 'owner'),
                                       coalesce(:afterJoined::timestamptz, '-infinity'),
                                       coalesce(:afterUser::uuid, '${MIN_UUID}'))
   order by group_members.role, joined_at, user_id
   limit :limit`,
);

/** The roster in role order (owner, admins, members), each by join time; `role` keeps one role. */
export function rosterPage(
  data: DataAccess,
  groupId: string,
  page: { role: GroupRole | undefined; after: RosterKey | undefined; limit: number },
): Promise<MemberRow[]> {
  return executeNamed<MemberRow, RosterParams>(data, ROSTER_PAGE, {
    groupId,
    role: page.role ?? null,
    afterRole: page.after?.[0] ?? null,
    afterJoined: page.after?.[1] ?? null,
    afterUser: page.after?.[2] ?? null,
    limit: page.limit,
  });
}

export interface MembershipRow extends GroupRow {
  role: GroupRole;
  joined_key: string;
}

/** A user's groups with their role, most recently joined first. */
export function membershipsPage(
  data: DataAccess,
  userId: string,
  page: { before: readonly [string, string] | undefined; limit: number },
): Promise<MembershipRow[]> {
  return executeBound<MembershipRow>(
    data,
    `select g.id, g.name, g.description, g.join_policy, g.owner_id, g.member_count, g.created_at,
            m.role::text as role, ${timeKeySql('m.joined_at')} as joined_key
     from group_members m join groups g on g.id = m.group_id
     where m.user_id = $1 and ${beforeTimeIdKey('m.joined_at', 'm.group_id')}
     order by m.joined_at desc, m.group_id desc
     limit $4`,
    [userId, ...timeIdKeyParams(page.before), page.limit],
  );
}

export interface RequestRow {
  user_id: string;
  username: string;
  created_key: string;
}

/** Pending join requests, oldest first. */
export function requestsPage(
  data: DataAccess,
  groupId: string,
  page: { after: readonly [string, string] | undefined; limit: number },
): Promise<RequestRow[]> {
  return executeBound<RequestRow>(
    data,
    `select user_id, ${usernameSql('user_id')} as username, ${timeKeySql('created_at')} as created_key
     from group_join_requests
     where group_id = $1
       and (created_at, user_id) > (coalesce($2::timestamptz, '-infinity'), coalesce($3::uuid, '${MIN_UUID}'))
     order by created_at, user_id
     limit $4`,
    [groupId, ...timeIdKeyParams(page.after), page.limit],
  );
}

export interface SearchRow extends GroupRow {
  name_key: string;
}

/**
 * Groups in name order (the unique index's), after `after`; with a query, those whose name starts
 * with `prefix` (a LIKE pattern, escaped) or has words starting with each of `words` (a tsquery).
 */
export function searchPage(
  data: DataAccess,
  page: {
    query: { prefix: string; words: string | null } | undefined;
    after: string | undefined;
    limit: number;
  },
): Promise<SearchRow[]> {
  const columns = `${GROUP_COLUMNS}, ${NAME_KEY} as name_key`;
  if (!page.query) {
    return executeBound<SearchRow>(
      data,
      `select ${columns} from groups where ${NAME_KEY} > $1 order by ${NAME_KEY} limit $2`,
      [page.after ?? '', page.limit],
    );
  }
  return executeBound<SearchRow>(
    data,
    `select ${columns} from groups
     where (${NAME_KEY} like $2 or to_tsvector('simple', name) @@ to_tsquery('simple', $3))
       and ${NAME_KEY} > $1
     order by ${NAME_KEY} limit $4`,
    [page.after ?? '', page.query.prefix, page.query.words, page.limit],
  );
}
