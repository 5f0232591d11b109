import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { userExistsSql, usernameSql } from '../users/index.js';
import { type MessageRow, orderedPair } from './dm.repository.js';

/**
 * The SQL that reads direct messages (dm.repository.ts stores them): a conversation's history
 * pages with the read marks they move, and the page of a user's conversations.
 */

export interface ConversationRow {
  conversation_id: string;
  peer_id: string;
  peer_username: string;
  activity_key: string;
  unread_count: number;
  /** The last message; nulls once no message is left (moderation may delete messages). */
  m_id: string | null;
  m_sender_id: string | null;
  m_body: string | null;
  m_filtered: boolean | null;
  m_created_at: Date | null;
}

type Key = readonly [timeKey: string, id: string] | undefined;

/** What one read of a conversation's history found, and what it changed. */
export interface HistoryRead {
  /** Whether the peer's account exists (an unknown peer is 404, not an empty page). */
  peerExists: boolean;
  conversationId: string | null;
  /** A block stands between the pair: nothing about the read may reach the peer. */
  blocked: boolean;
  /** The reader's read mark when this read moved it; null when it changed nothing. */
  movedReadMark: Date | null;
  /** The page, newest first. */
  messages: MessageRow[];
}

/**
 * The page of messages a history read returns: of the conversation `conversation` (SQL), newest
 * first after the key in the parameters `before` names (`$2`, `$3` unless told), at most `limit`
 * (SQL) rows. The chat benchmark's pgbench ceiling runs it alone.
 */
export const historyPageSql = (
  conversation: string,
  limit: string,
  before: [time: string, id: string] = ['$2', '$3'],
) =>
  `select m.id, m.conversation_id, m.sender_id, m.body, m.filtered, ${timeKeySql('m.created_at')} as created_key
  from messages m
  where m.conversation_id = ${conversation} and ${beforeTimeIdKey('m.created_at', 'm.id', before)}
  order by m.created_at desc, m.id desc
  limit ${limit}`;

interface HistoryReadParams {
  reader: string;
  peer: string;
  /** The `before` key: nulls on the first page. */
  before_time: string | null;
  before_id: string | null;
  limit: number;
  at: Date;
  user_a_id: string;
  user_b_id: string;
}

/**
 * One history read in one statement: the pair's conversation, a page of it, and the reader's read
 * mark moved to `at`, but only when the peer wrote after the mark (the side's newest-message time
 * in the conversation row, migration 0021), so a read that changes no unread count writes
 * nothing. Built once: the text is a prepared statement's key.
 */
const HISTORY_READ = namedSql<HistoryReadParams>(`with conv as (
   select id, blocked, case when user_a_id = :peer then last_message_a_at else last_message_b_at end as peer_wrote_at
   from conversations where user_a_id = :user_a_id and user_b_id = :user_b_id
 ), marked as (
   update conversation_participants p
   set last_read_at = greatest(coalesce(p.last_read_at, '-infinity'), :at)
   from conv
   where p.conversation_id = conv.id and p.user_id = :reader
     and conv.peer_wrote_at > coalesce(p.last_read_at, '-infinity')
   returning p.last_read_at
 ), page as (${historyPageSql('(select id from conv)', ':limit', [':before_time', ':before_id'])})
 select h.*, page.* from (select (select id from conv) as conv_id,
        coalesce((select blocked from conv), false) as blocked,
        ${userExistsSql(':peer')} as peer_exists,
        (select last_read_at from marked) as moved_read_mark) h left join page on true
 order by page.created_key desc, page.id desc`);

/**
 * A row of the history read: the head's columns, with one message of the page (all null when the
 * page is empty). Rows, not one JSON array built by Postgres: json_agg cost Postgres about 100 µs
 * a page, more than decoding the rows saves the service.
 */
type HistoryRow = {
  conv_id: string | null;
  blocked: boolean;
  peer_exists: boolean;
  moved_read_mark: Date | null;
} & { [K in keyof MessageRow]: MessageRow[K] | null };

/** Reads a page of the pair's history as `reader` at `at`, moving their read mark when it should. */
export async function readHistory(
  data: DataAccess,
  read: { reader: string; peer: string; before: Key; limit: number; at: Date },
): Promise<HistoryRead> {
  const [userA, userB] = orderedPair(read.reader, read.peer);
  const [keyTime, keyId] = timeIdKeyParams(read.before);
  const rows = await executeNamed<HistoryRow, HistoryReadParams>(data, HISTORY_READ, {
    reader: read.reader,
    peer: read.peer,
    before_time: keyTime,
    before_id: keyId,
    limit: read.limit,
    at: read.at,
    user_a_id: userA,
    user_b_id: userB,
  });
  const [row] = rows;
  if (!row) throw new Error('readHistory: the statement answers at least one row');
  return {
    peerExists: row.peer_exists,
    conversationId: row.conv_id,
    blocked: row.blocked,
    movedReadMark: row.moved_read_mark,
    // A row carries the head's columns too; they are simply not read as the message's.
    messages: rows.filter((r) => r.id !== null) as MessageRow[],
  };
}

/** The user's read mark in the conversation; undefined when they never read it or are no participant. */
export async function readMarkOf(
  data: DataAccess,
  conversationId: string,
  userId: string,
): Promise<Date | undefined> {
  const [row] = await executeBound<{ last_read_at: Date | null }>(
    data,
    'select last_read_at from conversation_participants where conversation_id = $1 and user_id = $2',
    [conversationId, userId],
  );
  return row?.last_read_at ?? undefined;
}

const activityKeyset = beforeTimeIdKey('last_message_at', 'id');

/**
 * A page of the user's conversations, most recent activity first, each with its peer, last
 * message and unread count, in one statement. The page comes from the two activity indexes (the
 * user as user_a, as user_b), each read only as far as the page needs; the last message is one
 * index probe and the unread count one range scan of the conversation's history index.
 */
export function conversationsOf(
  data: DataAccess,
  userId: string,
  page: { after: Key; limit: number },
): Promise<ConversationRow[]> {
  return executeBound<ConversationRow>(
    data,
    `with mine as (
       (select id, user_b_id as peer_id, last_message_at from conversations
        where user_a_id = $1 and ${activityKeyset}
        order by last_message_at desc, id desc limit $4)
       union all
       (select id, user_a_id, last_message_at from conversations
        where user_b_id = $1 and ${activityKeyset}
        order by last_message_at desc, id desc limit $4)
       order by last_message_at desc, id desc limit $4
     )
     select c.id as conversation_id, c.peer_id, ${usernameSql('c.peer_id')} as peer_username,
            ${timeKeySql('c.last_message_at')} as activity_key,
            (select count(*)::int from messages x
             where x.conversation_id = c.id and x.sender_id = c.peer_id
               and x.created_at > coalesce(p.last_read_at, '-infinity')) as unread_count,
            m.id as m_id, m.sender_id as m_sender_id, m.body as m_body, m.filtered as m_filtered,
            m.created_at as m_created_at
     from mine c
     left join conversation_participants p on p.conversation_id = c.id and p.user_id = $1
     left join lateral (
       select id, sender_id, body, filtered, created_at from messages
       where conversation_id = c.id order by created_at desc, id desc limit 1
     ) m on true
     order by c.last_message_at desc, c.id desc`,
    [userId, ...timeIdKeyParams(page.after), page.limit],
  );
}
