import { type DataAccess, transaction } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { userExistsSql } from '../users/index.js';

/**
 * The SQL of the inbox (migrations 0034 and 0039). A user's notifications are stored and deleted
 * under a transaction lock of that user (an advisory lock in the notifications' own class), so
 * concurrent writes for one user keep the cap and the user's count exactly.
 */

export interface NotificationRow {
  id: string;
  user_id: string;
  code: string;
  subject: string;
  content: Record<string, unknown>;
  sender_id: string | null;
  created_at: Date;
  read_at: Date | null;
}

export interface NewNotification {
  id: string;
  userId: string;
  code: string;
  subject: string;
  contentJson: string;
  senderId: string | null;
  createdAt: Date;
}

const COLUMNS = 'id, user_id, code, subject, content, sender_id, created_at, read_at';

/** The advisory lock class of inbox writes (any constant; it keeps them apart from other locks). */
const LOCK_CLASS = 7_201;

/**
 * SQL that takes the inbox lock of the user `idSql` names until the transaction ends: another
 * module's statement that already holds its other locks takes it in the same round trip, then
 * stores with `inboxLocked` (a purchase's sale statement takes the seller's).
 */
export const inboxLockSql = (idSql: string) =>
  `pg_advisory_xact_lock(${LOCK_CLASS}, hashtext((${idSql})::text))`;

const LOCK_SQL = `select ${inboxLockSql('u')} from unnest($1::uuid[]) as u order by u`;

/**
 * Inserts the notifications of users that exist and, in the same statement, removes what would
 * be past `$2` in each of their inboxes. The rows kept are the unread newest first, then the read
 * newest first, and the new ones (unread, newest) come first of all, so what goes is the oldest
 * read rows, then the oldest unread ones. How many go comes from the user's count
 * (notification_inboxes, which this updates): an inbox under the cap costs one row read and one row
 * write, and at the cap each row that goes is found through an index in the order it goes. The
 * statement's snapshot is taken after the inbox lock was held, so it sees every row and count
 * there is. Exported for the purchase's pgbench ceiling (bench/economy/ceiling.ts), which runs it
 * as is.
 */
export const STORE_NOTIFICATIONS_SQL = `
  with fresh as (
    select n.id, n.user_id, n.code, n.subject, n.content, n.sender_id, n.created_at
    from jsonb_to_recordset($1::jsonb) as n (
      id uuid, user_id uuid, code text, subject text, content jsonb, sender_id uuid, created_at timestamptz)
    where ${userExistsSql('n.user_id')}
  ),
  stored as (
    insert into notifications (id, user_id, code, subject, content, sender_id, created_at)
    select * from fresh
    returning ${COLUMNS}
  ),
  inboxes as (
    select added.user_id, coalesce(i.stored, 0) + added.n as total
    from (select user_id, count(*) as n from fresh group by user_id) added
    left join notification_inboxes i using (user_id)
  ),
  counted as (
    insert into notification_inboxes (user_id, stored)
    select user_id, least(total, $2::int) from inboxes
    on conflict (user_id) do update set stored = excluded.stored
  ),
  over as (select user_id, total - $2::int as n from inboxes where total > $2::int),
  read_gone as (
    select over.user_id, gone.id from over cross join lateral (
      select id from notifications
      where user_id = over.user_id and read_at is not null
      order by created_at, id limit over.n) gone
  ),
  unread_gone as (
    select gone.id from over cross join lateral (
      select id from notifications
      where user_id = over.user_id and read_at is null
      order by created_at, id
      limit over.n - (select count(*) from read_gone where read_gone.user_id = over.user_id)) gone
  ),
  trimmed as (
    delete from notifications
    where id = any (array(select id from read_gone union all select id from unread_gone))
  )
  select * from stored`;

/**
 * Stores notifications inside the caller's transaction and trims their users' inboxes to `cap`;
 * those for users that no longer exist are skipped. Answers the stored rows. Two statements: the
 * inbox lock of each user (concurrent writes for one user then keep the cap and the count exactly),
 * then the insert with its trim; one when the caller's statement took the locks already
 * (`inboxLockSql`).
 */
export async function storeNotifications(
  tx: DataAccess,
  notes: readonly NewNotification[],
  cap: number,
  inboxLocked = false,
): Promise<NotificationRow[]> {
  // More than the cap for one user at once: only the last `cap` of them could stay.
  const counted = new Map<string, number>();
  const kept = [...notes]
    .reverse()
    .filter((note) => {
      const count = (counted.get(note.userId) ?? 0) + 1;
      counted.set(note.userId, count);
      return count <= cap;
    })
    .reverse();
  if (kept.length === 0) return [];
  if (!inboxLocked) await lockInboxes(tx, [...new Set(kept.map((note) => note.userId))]);
  return executeBound<NotificationRow>(tx, STORE_NOTIFICATIONS_SQL, [
    JSON.stringify(
      kept.map((note) => ({
        id: note.id,
        user_id: note.userId,
        code: note.code,
        subject: note.subject,
        content: JSON.parse(note.contentJson),
        sender_id: note.senderId,
        created_at: note.createdAt.toISOString(),
      })),
    ),
    cap,
  ]);
}

/** Takes the inbox locks of these users until the transaction ends, in one order whoever asks. */
function lockInboxes(tx: DataAccess, userIds: readonly string[]): Promise<unknown> {
  return executeBound(tx, LOCK_SQL, [userIds]);
}

const PAGE_SQL = `
  select ${COLUMNS} from notifications
  where user_id = $1 and ($2::boolean is false or read_at is null)
    and ($3::timestamptz is null or (created_at, id) < ($3, $4::uuid))
  order by created_at desc, id desc limit $5`;

/** A page of a user's notifications, newest first, after the key of the previous page's last. */
export async function notificationsPage(
  data: DataAccess,
  userId: string,
  unreadOnly: boolean,
  after: { createdAt: string; id: string } | undefined,
  limit: number,
): Promise<NotificationRow[]> {
  return executeBound<NotificationRow>(data, PAGE_SQL, [
    userId,
    unreadOnly,
    after?.createdAt ?? null,
    after?.id ?? null,
    limit,
  ]);
}

const UNREAD_SQL = 'select count(*)::int as n from notifications where user_id = $1 and read_at is null';

export async function unreadCount(data: DataAccess, userId: string): Promise<number> {
  const [row] = await executeBound<{ n: number }>(data, UNREAD_SQL, [userId]);
  return row?.n ?? 0;
}

const READ_IDS_SQL = `
  update notifications set read_at = $3
  where user_id = $1 and id = any($2::uuid[]) and read_at is null`;
const READ_ALL_SQL = 'update notifications set read_at = $2 where user_id = $1 and read_at is null';

/** Marks the user's notifications read (those already read keep their read_at); others' ids change nothing. */
export async function markRead(
  data: DataAccess,
  userId: string,
  ids: readonly string[] | 'all',
  at: Date,
): Promise<void> {
  if (ids === 'all') await executeBound(data, READ_ALL_SQL, [userId, at]);
  else await executeBound(data, READ_IDS_SQL, [userId, ids, at]);
}

const DELETE_SQL = `
  with gone as (delete from notifications where id = $1 and user_id = $2 returning id),
  counted as (
    update notification_inboxes set stored = stored - 1
    where user_id = $2 and exists (select from gone)
  )
  select id from gone`;

/**
 * Deletes one of the user's notifications under the user's inbox lock, counting it out of the
 * inbox (a store's trim, which deletes rows and sets the count, never runs beside it): false when
 * it is not theirs or does not exist.
 */
export async function deleteNotification(data: DataAccess, userId: string, id: string): Promise<boolean> {
  return transaction(data, async (tx) => {
    await lockInboxes(tx, [userId]);
    return (await executeBound(tx, DELETE_SQL, [id, userId])).length > 0;
  });
}

export interface BroadcastRow {
  id: string;
  code: string;
  subject: string;
  content: Record<string, unknown>;
  created_at: Date;
  last_user_id: string | null;
}

const INSERT_BROADCAST_SQL = `
  insert into notification_broadcasts (id, code, subject, content, created_at)
  values ($1, $2, $3, $4::jsonb, $5)`;

/** Records a broadcast to everyone: the job notifies the accounts created by `createdAt`. */
export async function insertBroadcast(
  tx: DataAccess,
  broadcast: { id: string; code: string; subject: string; contentJson: string; createdAt: Date },
): Promise<void> {
  await executeBound(tx, INSERT_BROADCAST_SQL, [
    broadcast.id,
    broadcast.code,
    broadcast.subject,
    broadcast.contentJson,
    broadcast.createdAt,
  ]);
}

const CLAIM_BROADCAST_SQL = `
  select id, code, subject, content, created_at, last_user_id from notification_broadcasts
  where finished_at is null order by created_at limit 1 for update skip locked`;

/** The oldest unfinished broadcast, locked for the transaction; undefined when none is free. */
export async function claimBroadcast(tx: DataAccess): Promise<BroadcastRow | undefined> {
  const [row] = await executeBound<BroadcastRow>(tx, CLAIM_BROADCAST_SQL, []);
  return row;
}

const ADVANCE_SQL = `
  update notification_broadcasts set last_user_id = $2,
    finished_at = case when $3::boolean then $4::timestamptz else null end
  where id = $1`;

/** Records how far a broadcast got, in the transaction that wrote that batch; `finished` ends it. */
export async function advanceBroadcast(
  tx: DataAccess,
  id: string,
  lastUserId: string | null,
  finished: boolean,
  at: Date,
): Promise<void> {
  await executeBound(tx, ADVANCE_SQL, [id, lastUserId, finished, at]);
}
