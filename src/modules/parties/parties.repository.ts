import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, lockNamed } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';
import { namedSql } from '../../platform/named-sql.js';
import { blockBetweenSql } from '../social/index.js';
import { usernameSql } from '../users/index.js';

/** The SQL of parties, their members and invitations (migration 0036). */

export interface PartyRow {
  id: string;
  leader_id: string;
  open: boolean;
  max_size: number;
  created_at: Date;
}

export interface MemberRow {
  user_id: string;
  /** Null only for an account deleted while the statement ran. */
  username: string | null;
  /** joined_at to the microsecond, as text (`timeKeySql`); its time is `timeOfKey(joined_key)`. */
  joined_key: string;
}

/** A party with its members, longest-standing first (joined_at, then user_id). */
export interface PartyRoster extends PartyRow {
  members: MemberRow[];
}

const PARTY_COLUMNS = 'id, leader_id, open, max_size::int as max_size, created_at';
const MEMBER_ORDER = 'joined_at, user_id';

/**
 * SQL that is true when `userIdSql` is a member of `partyIdSql` (parameters or columns of uuids),
 * for statements that read or write only for members (the party's chat), in one round trip.
 */
export const partyMemberSql = (partyIdSql: string, userIdSql: string) =>
  `exists (select 1 from party_members where party_id = ${partyIdSql} and user_id = ${userIdSql})`;

/** The key of a user's own lock (`lockUserParties`) is this prefix and their id. */
export const USER_LOCK_PREFIX = 'parties:user:';

/**
 * Makes one user's creates, joins and account deletion take turns, taken before any party's row
 * lock: the party a user is in, read after it, stays theirs until the transaction ends (the
 * unique index on party_members (user_id) backs this up).
 */
export const lockUserParties = (data: DataAccess, userId: string) =>
  lockNamed(data, `${USER_LOCK_PREFIX}${userId}`);

/*
 * The statements of a join and a leave, named so that bench/parties/ceiling.ts runs these texts
 * themselves with pgbench.
 */
export const LOCK_PARTY_SQL = `select ${PARTY_COLUMNS} from parties where id = $1 for update`;
export const PARTY_ROSTER_SQL = `select ${PARTY_COLUMNS},
       (select json_agg(json_build_object('user_id', m.user_id, 'username', ${usernameSql('m.user_id')},
                                          'joined_key', ${timeKeySql('m.joined_at')})
                        order by m.joined_at, m.user_id)
        from party_members m where m.party_id = parties.id) as members
     from parties where id = $1`;
export const PARTY_MEMBER_IDS_SQL = `select user_id from party_members where party_id = $1 order by ${MEMBER_ORDER}`;
/**
 * A new member counts as offline since their join until a sweep finds them online (the next
 * pass, which reads every member whose offline_since is set): one who joins offline and stays so
 * is removed a grace after the join, with no presence change for the sweep to hear of.
 */
export const INSERT_MEMBER_SQL =
  'insert into party_members (party_id, user_id, joined_at, offline_since) values ($1, $2, $3, $3)';
export const DELETE_MEMBER_SQL = `delete from party_members where party_id = $1 and user_id = $2
       and ($3::timestamptz is null or offline_since <= $3::timestamptz)
     returning user_id`;
export const JOIN_FACTS_SQL = `select (select party_id from party_members where user_id = $2) as current_party,
       exists (select 1 from party_invites where party_id = $1 and user_id = $2 and expires_at > $3) as invited,
       exists (select 1 from party_members m where m.party_id = $1 and ${blockBetweenSql('m.user_id', '$2')}) as blocked,
       (select count(*) from party_members where party_id = $1)::int as member_count`;

/** The party, its row locked until the transaction ends: every change of a party takes it first. */
export async function lockParty(data: DataAccess, partyId: string): Promise<PartyRow | undefined> {
  const [row] = await executeBound<PartyRow>(data, LOCK_PARTY_SQL, [partyId]);
  return row;
}

/** The party and its members, read in one statement (one snapshot): undefined when there is none. */
export async function partyRoster(data: DataAccess, partyId: string): Promise<PartyRoster | undefined> {
  const [row] = await executeBound<PartyRow & { members: MemberRow[] | null }>(data, PARTY_ROSTER_SQL, [
    partyId,
  ]);
  return row ? { ...row, members: row.members ?? [] } : undefined;
}

/** The id of the party the user is a member of, if any. */
export async function partyIdOfMember(data: DataAccess, userId: string): Promise<string | undefined> {
  const [row] = await executeBound<{ party_id: string }>(
    data,
    'select party_id from party_members where user_id = $1',
    [userId],
  );
  return row?.party_id;
}

/** The members' user ids, longest-standing first. */
export async function partyMemberIds(data: DataAccess, partyId: string): Promise<string[]> {
  const rows = await executeBound<{ user_id: string }>(data, PARTY_MEMBER_IDS_SQL, [partyId]);
  return rows.map((row) => row.user_id);
}

/**
 * Those of `userIds` who are members of the party, their membership rows held (for share) until
 * the caller's transaction ends: a leave, kick or offline removal of one of them waits for it.
 */
export async function holdMembers(
  data: DataAccess,
  partyId: string,
  userIds: readonly string[],
): Promise<Set<string>> {
  const rows = await executeBound<{ user_id: string }>(
    data,
    'select user_id from party_members where party_id = $1 and user_id = any($2::uuid[]) for share',
    [partyId, toUuidArray(userIds)],
  );
  return new Set(rows.map((row) => row.user_id));
}

interface NewParty {
  id: string;
  leaderId: string;
  open: boolean;
  maxSize: number;
  at: Date;
}

/** The party and its leader as its first member, in one statement. */
const INSERT_PARTY = namedSql<NewParty>(
  `with party as (
     insert into parties (id, leader_id, open, max_size, created_at)
     values (:id, :leaderId, :open, :maxSize, :at) returning id
   )
   insert into party_members (party_id, user_id, joined_at, offline_since) select id, :leaderId, :at, :at from party`,
);

export async function insertParty(data: DataAccess, party: NewParty): Promise<void> {
  await executeNamed(data, INSERT_PARTY, party);
}

export async function insertMember(
  data: DataAccess,
  partyId: string,
  userId: string,
  at: Date,
): Promise<void> {
  await executeBound(data, INSERT_MEMBER_SQL, [partyId, userId, at]);
}

/**
 * Deletes the membership; with `offlineBy`, only while the member has been offline since that
 * time at the latest (a sweep's removal: a member seen online again meanwhile stays). Answers
 * whether this statement deleted it, so of two removals only one goes on.
 */
export async function deleteMember(
  data: DataAccess,
  partyId: string,
  userId: string,
  offlineBy: Date | null = null,
): Promise<boolean> {
  const rows = await executeBound(data, DELETE_MEMBER_SQL, [partyId, userId, offlineBy]);
  return rows.length > 0;
}

export async function deleteParty(data: DataAccess, partyId: string): Promise<void> {
  await executeBound(data, 'delete from parties where id = $1', [partyId]);
}

export async function setLeader(data: DataAccess, partyId: string, userId: string): Promise<void> {
  await executeBound(data, 'update parties set leader_id = $2 where id = $1', [partyId, userId]);
}

export async function updateSettings(
  data: DataAccess,
  partyId: string,
  change: { open?: boolean | undefined; maxSize?: number | undefined },
): Promise<void> {
  await executeBound(
    data,
    'update parties set open = coalesce($2, open), max_size = coalesce($3, max_size) where id = $1',
    [partyId, change.open ?? null, change.maxSize ?? null],
  );
}

/** What a join of the party by the user is decided on, read under the party's lock in one statement. */
export interface JoinFacts {
  /** The party the user is in, if any. */
  current_party: string | null;
  /** The user holds a pending invitation to the party. */
  invited: boolean;
  /** A member blocked the user, or the user blocked a member. */
  blocked: boolean;
  member_count: number;
}

export async function joinFacts(
  data: DataAccess,
  partyId: string,
  userId: string,
  now: Date,
): Promise<JoinFacts> {
  const [row] = await executeBound<JoinFacts>(data, JOIN_FACTS_SQL, [partyId, userId, now]);
  if (!row) throw new Error('a select without from answers one row');
  return row;
}

export interface InviteRow {
  party_id: string;
  user_id: string;
  invited_by: string;
  created_at: Date;
  expires_at: Date;
}

/** Stores the invitation, or renews the pending or expired one of the same party and invitee. */
export async function upsertInvite(data: DataAccess, invite: InviteRow): Promise<InviteRow> {
  const [row] = await executeBound<InviteRow>(
    data,
    `insert into party_invites (party_id, user_id, invited_by, created_at, expires_at)
     values ($1, $2, $3, $4, $5)
     on conflict (party_id, user_id) do update
       set invited_by = excluded.invited_by, created_at = excluded.created_at, expires_at = excluded.expires_at
     returning party_id, user_id, invited_by, created_at, expires_at`,
    [invite.party_id, invite.user_id, invite.invited_by, invite.created_at, invite.expires_at],
  );
  if (!row) throw new Error('upsert returned no row');
  return row;
}

export async function deleteInvite(data: DataAccess, partyId: string, userId: string): Promise<void> {
  await executeBound(data, 'delete from party_invites where party_id = $1 and user_id = $2', [
    partyId,
    userId,
  ]);
}

/** Deletes up to `limit` invitations that expired by `now`; answers how many. */
export async function pruneInvites(data: DataAccess, now: Date, limit: number): Promise<number> {
  const rows = await executeBound(
    data,
    `delete from party_invites where (party_id, user_id) in
       (select party_id, user_id from party_invites where expires_at <= $1 limit $2)
     returning user_id`,
    [now, limit],
  );
  return rows.length;
}

/** The start of a walk in user id order: no id sorts before it. */
export const NO_USER_ID = '00000000-0000-0000-0000-000000000000';

/** A page of memberships after `afterUserId` in user id order, as the offline sweep walks them. */
export async function membershipsAfter(
  data: DataAccess,
  afterUserId: string,
  limit: number,
): Promise<{ user_id: string; offline: boolean }[]> {
  return executeBound(
    data,
    `select user_id, offline_since is not null as offline from party_members
     where user_id > $1 order by user_id limit $2`,
    [afterUserId, limit],
  );
}

export interface OfflineMember {
  party_id: string;
  user_id: string;
  offline_since: Date;
}

/**
 * A page of the members whose offline_since is set, after `after` in (offline_since, user_id)
 * order (the longest absent first): read from party_members_offline_since_idx (migration 0039),
 * so a page costs its rows whatever the number of members online.
 */
export const OFFLINE_MEMBERS_SQL = `select party_id, user_id, offline_since from party_members
     where offline_since is not null and (offline_since, user_id) > ($1::timestamptz, $2::uuid)
     order by offline_since, user_id limit $3`;

export async function offlineMembersAfter(
  data: DataAccess,
  after: { offline_since: Date; user_id: string },
  limit: number,
): Promise<OfflineMember[]> {
  return executeBound(data, OFFLINE_MEMBERS_SQL, [after.offline_since, after.user_id, limit]);
}

/**
 * Records what a sweep saw: members newly seen offline get `offline_since` (`at`, or their join
 * when later), members seen online again lose it. Rows already in that state stay as they are, so
 * the first sighting of an absence is the one kept.
 */
export async function markPresence(
  data: DataAccess,
  offline: readonly string[],
  online: readonly string[],
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `update party_members set offline_since = case when user_id = any($1::uuid[]) then greatest(joined_at, $3) end
     where (user_id = any($1::uuid[]) and offline_since is null)
        or (user_id = any($2::uuid[]) and offline_since is not null)`,
    [offline, online, at],
  );
}
