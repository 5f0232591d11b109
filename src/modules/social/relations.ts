import type { audienceSchema, profileVisibilitySchema } from '../../../protocol/profiles.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';

export interface Relation {
  /** An accepted friendship exists in either direction. */
  friends: boolean;
  /** Either user blocked the other. */
  blocked: boolean;
}

/**
 * A privacy setting: who may see or reach a user. Presence visibility and the DM policy say
 * everyone, friends or nobody; profile visibility says public and private for everyone and nobody.
 */
export type PrivacySetting =
  | (typeof audienceSchema.options)[number]
  | (typeof profileVisibilitySchema.options)[number];

/**
 * Whether a privacy setting admits a user who is (`friends`) or is not the owner's friend: the one
 * everyone / friends / nobody rule of presence, direct messages and follow lists. Blocks, and the
 * owner who always sees their own, are the callers' rules, decided before this one.
 */
export const privacyAdmits = (setting: PrivacySetting, friends: boolean): boolean =>
  setting === 'everyone' || setting === 'public' || (setting === 'friends' && friends);

/**
 * How `viewerId` relates to each of `otherIds`, in one statement for the whole batch (two indexed
 * scans, one round trip: every direct message and presence subscription asks). Privacy rules
 * (presence visibility, DM policy) are decided from this.
 */
export async function relationsOf(
  data: DataAccess,
  viewerId: string,
  otherIds: readonly string[],
): Promise<Map<string, Relation>> {
  const relations = new Map<string, Relation>(otherIds.map((id) => [id, { friends: false, blocked: false }]));
  if (otherIds.length === 0) return relations;
  const ids = toUuidArray(otherIds);
  const rows = await executeBound<{ other: string; flag: keyof Relation }>(
    data,
    `select case when requester_id = $1 then addressee_id else requester_id end as other, 'friends' as flag
     from friendships
     where status = 'accepted'
       and ((requester_id = $1 and addressee_id = any($2::uuid[])) or (addressee_id = $1 and requester_id = any($2::uuid[])))
     union all
     select case when blocker_id = $1 then blocked_id else blocker_id end, 'blocked'
     from blocks
     where (blocker_id = $1 and blocked_id = any($2::uuid[])) or (blocked_id = $1 and blocker_id = any($2::uuid[]))`,
    [viewerId, ids],
  );
  for (const row of rows) setFlag(relations, row.other, row.flag);
  return relations;
}

/**
 * SQL for statements of other modules that decide in the database (a direct message's guarded
 * insert): whether an accepted friendship joins the users the two expressions name, either way.
 */
export const friendsBetweenSql = (a: string, b: string) =>
  `exists (select 1 from friendships where status = 'accepted'
     and ((requester_id = ${a} and addressee_id = ${b}) or (requester_id = ${b} and addressee_id = ${a})))`;

/**
 * SQL for other modules' statements: a query whose rows are the ids of the accepted friends of the
 * user the expression names (pending requests do not count), for a list of a user's friends' rows.
 */
export const friendIdsSql = (user: string) =>
  `select addressee_id from friendships where requester_id = ${user} and status = 'accepted'
   union all
   select requester_id from friendships where addressee_id = ${user} and status = 'accepted'`;

/** SQL: whether either of the users the two expressions name blocked the other. */
export const blockBetweenSql = (a: string, b: string) =>
  `exists (select 1 from blocks
     where (blocker_id = ${a} and blocked_id = ${b}) or (blocker_id = ${b} and blocked_id = ${a}))`;

function setFlag(relations: Map<string, Relation>, id: string, flag: keyof Relation) {
  const relation = relations.get(id);
  if (relation) relation[flag] = true;
}
