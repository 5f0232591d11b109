import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { usernameSql } from '../users/index.js';

/**
 * The SQL of the social graph (friendships, follows, blocks; migration 0007). Writes about a pair
 * of users run in a transaction that first takes the pair's lock (`lockPair`), so the checks
 * before them (a block, a request the other way) still hold when they write.
 */

export interface FriendshipRow {
  requester_id: string;
  addressee_id: string;
  status: 'pending' | 'accepted';
}

/** Advisory lock class of social pairs (the two-key form, apart from the migrations' one-key lock). */
const PAIR_LOCK_CLASS = 7;

/**
 * Serialises writes about the pair {a, b}, in either order, until the transaction ends: two
 * users asking each other at once end with one accepted friendship, and a block cannot miss a
 * request or follow written beside it. Unrelated pairs share a lock only on a hash collision.
 * `shared` is for writers elsewhere that must not pass a block (direct messages): they wait for
 * social writes of the pair and those wait for them, but they do not wait for each other.
 */
export async function lockPair(data: DataAccess, a: string, b: string, shared = false): Promise<void> {
  const lock = shared ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await executeBound(data, `select 1 as locked from ${lock}($1::int, hashtext($2))`, [
    PAIR_LOCK_CLASS,
    [a, b].sort().join(':'),
  ]);
}

/** The friendship row between the two users, in whichever direction it was asked. */
export async function friendshipBetween(
  data: DataAccess,
  a: string,
  b: string,
): Promise<FriendshipRow | undefined> {
  const [row] = await executeBound<FriendshipRow>(
    data,
    `select requester_id, addressee_id, status::text as status from friendships
     where (requester_id = $1 and addressee_id = $2) or (requester_id = $2 and addressee_id = $1)`,
    [a, b],
  );
  return row;
}

export async function insertFriendRequest(
  data: DataAccess,
  requesterId: string,
  addresseeId: string,
  at: Date,
): Promise<void> {
  await executeBound(
    data,
    `insert into friendships (requester_id, addressee_id, status, created_at) values ($1, $2, 'pending', $3)`,
    [requesterId, addresseeId, at],
  );
}

/** Accepts the pending request requester -> addressee; false when there is none. */
export async function acceptFriendRequest(
  data: DataAccess,
  requesterId: string,
  addresseeId: string,
  at: Date,
): Promise<boolean> {
  const rows = await executeBound(
    data,
    `update friendships set status = 'accepted', responded_at = $3
     where requester_id = $1 and addressee_id = $2 and status = 'pending' returning 1 as accepted`,
    [requesterId, addresseeId, at],
  );
  return rows.length > 0;
}

/** Deletes the pending request requester -> addressee (declined or withdrawn); false when there is none. */
export async function deleteFriendRequest(
  data: DataAccess,
  requesterId: string,
  addresseeId: string,
): Promise<boolean> {
  const rows = await executeBound(
    data,
    `delete from friendships where requester_id = $1 and addressee_id = $2 and status = 'pending'
     returning 1 as deleted`,
    [requesterId, addresseeId],
  );
  return rows.length > 0;
}

/** Ends the accepted friendship between the two, either direction; false when they were not friends. */
export async function deleteFriendship(data: DataAccess, a: string, b: string): Promise<boolean> {
  const rows = await executeBound(
    data,
    `delete from friendships
     where ((requester_id = $1 and addressee_id = $2) or (requester_id = $2 and addressee_id = $1))
       and status = 'accepted'
     returning 1 as deleted`,
    [a, b],
  );
  return rows.length > 0;
}

export async function insertFollow(data: DataAccess, followerId: string, followedId: string, at: Date) {
  await executeBound(
    data,
    'insert into follows (follower_id, followed_id, created_at) values ($1, $2, $3) on conflict do nothing',
    [followerId, followedId, at],
  );
}

export async function deleteFollow(data: DataAccess, followerId: string, followedId: string) {
  await executeBound(data, 'delete from follows where follower_id = $1 and followed_id = $2', [
    followerId,
    followedId,
  ]);
}

export async function insertBlock(data: DataAccess, blockerId: string, blockedId: string, at: Date) {
  await executeBound(
    data,
    'insert into blocks (blocker_id, blocked_id, created_at) values ($1, $2, $3) on conflict do nothing',
    [blockerId, blockedId, at],
  );
}

export async function deleteBlock(data: DataAccess, blockerId: string, blockedId: string) {
  await executeBound(data, 'delete from blocks where blocker_id = $1 and blocked_id = $2', [
    blockerId,
    blockedId,
  ]);
}

/**
 * What a block ends, in one statement: the friendship or pending request and the follows between
 * the two, both ways. Returns whether they were friends (the other is then told).
 */
export async function severPair(data: DataAccess, a: string, b: string): Promise<{ wereFriends: boolean }> {
  const [row] = await executeBound<{ were_friends: boolean }>(
    data,
    `with ended as (
       delete from friendships
       where (requester_id = $1 and addressee_id = $2) or (requester_id = $2 and addressee_id = $1)
       returning status
     ), unfollowed as (
       delete from follows
       where (follower_id = $1 and followed_id = $2) or (follower_id = $2 and followed_id = $1)
     )
     select exists (select 1 from ended where status = 'accepted') as were_friends`,
    [a, b],
  );
  return { wereFriends: row?.were_friends === true };
}

/**
 * The lists, each a query of (other, since) for user $1: the other user of each row and when the
 * relation began (a friendship when it was accepted). All are read newest first.
 */
const LIST_SOURCES = {
  friends: `select addressee_id as other, coalesce(responded_at, created_at) as since
            from friendships where requester_id = $1 and status = 'accepted'
            union all
            select requester_id, coalesce(responded_at, created_at)
            from friendships where addressee_id = $1 and status = 'accepted'`,
  incoming: `select requester_id as other, created_at as since
             from friendships where addressee_id = $1 and status = 'pending'`,
  outgoing: `select addressee_id as other, created_at as since
             from friendships where requester_id = $1 and status = 'pending'`,
  followers: 'select follower_id as other, created_at as since from follows where followed_id = $1',
  following: 'select followed_id as other, created_at as since from follows where follower_id = $1',
  blocks: 'select blocked_id as other, created_at as since from blocks where blocker_id = $1',
} as const;

export type ListName = keyof typeof LIST_SOURCES;

/**
 * Keyset order: (since, other id), newest first. Neither changes while the row exists, so rows
 * written or removed between pages never shift one. The key's time goes out as text with
 * microseconds: a Date keeps only milliseconds, and two rows a fraction apart would be skipped.
 */
const listSql = (source: string) => `
  select r.other as id, ${usernameSql('r.other')} as username, r.since,
         ${timeKeySql('r.since')} as since_key
  from (${source}) r
  where ${beforeTimeIdKey('r.since', 'r.other')}
  order by r.since desc, r.other desc
  limit $4`;

const LIST_SQL = Object.fromEntries(
  Object.entries(LIST_SOURCES).map(([name, source]) => [name, listSql(source)]),
) as Record<ListName, string>;

export interface ListRow {
  id: string;
  username: string;
  since: Date;
  /** The row's keyset position: `since` to the microsecond. */
  sinceKey: string;
}

export async function listOf(
  data: DataAccess,
  list: ListName,
  userId: string,
  page: { after: readonly [sinceKey: string, id: string] | undefined; limit: number },
): Promise<ListRow[]> {
  const rows = await executeBound<{ id: string; username: string; since: Date | string; since_key: string }>(
    data,
    LIST_SQL[list],
    [userId, ...timeIdKeyParams(page.after), page.limit],
  );
  return rows.map((r) => ({
    id: r.id,
    username: r.username,
    since: new Date(r.since),
    sinceKey: r.since_key,
  }));
}
