import type { EntityManager } from '@mikro-orm/postgresql';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import { executeBound } from '../../platform/db.js';
import { dmPolicySql } from '../profiles/index.js';
import { blockBetweenSql, friendsBetweenSql } from '../social/index.js';
import { userExistsSql, usernameSql } from '../users/index.js';

/**
 * The SQL of direct messages (tables of migrations 0002 and 0011). A conversation is stored with
 * its pair ordered (`user_a_id < user_b_id`, as the uuids compare), so callers pass `orderedPair`.
 */

export interface MessageRow {
  id: string;
  conversation_id: string;
  sender_id: string | null;
  body: string;
  filtered: boolean;
  /**
   * created_at to the microsecond, as text (`timeKeySql`): the row's keyset position, and its time
   * (`timeOfKey`), read without parsing a Date per row.
   */
  created_key: string;
}

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

/** Lowercase canonical uuids compare as text the way Postgres compares the uuids. */
export const orderedPair = (a: string, b: string): [string, string] => (a < b ? [a, b] : [b, a]);

/** The conversation of the pair, or undefined before its first message. */
export async function conversationOf(em: EntityManager, a: string, b: string): Promise<string | undefined> {
  const [row] = await executeBound<{ id: string }>(
    em,
    'select id from conversations where user_a_id = $1 and user_b_id = $2',
    orderedPair(a, b),
  );
  return row?.id;
}

/**
 * The pair's conversation, created with both participants when missing. A concurrent first send
 * waits on the unique key and inserts nothing; the select after it, a new statement, then sees
 * the other transaction's committed row.
 */
export async function ensureConversation(
  em: EntityManager,
  newId: string,
  a: string,
  b: string,
  at: Date,
): Promise<string | undefined> {
  const [userA, userB] = orderedPair(a, b);
  const [created] = await executeBound<{ id: string }>(
    em,
    `with created as (
       insert into conversations (id, user_a_id, user_b_id, created_at, last_message_at, blocked)
       values ($1, $2, $3, $4, $4, ${blockBetweenSql('$2', '$3')})
       on conflict (user_a_id, user_b_id) do nothing returning id
     ), joined as (
       insert into conversation_participants (conversation_id, user_id)
       select id, unnest(array[$2, $3]::uuid[]) from created
     )
     select id from created`,
    [newId, userA, userB, at],
  );
  if (created) return created.id;
  // Undefined only when one of the users was deleted since the insert met their conversation.
  return conversationOf(em, userA, userB);
}

/** What may refuse a direct message, read in the statement that stores it. */
export interface SendFacts {
  /** An accepted friendship joins sender and peer. */
  friends: boolean;
  /** Either of them blocked the other. */
  blocked: boolean;
  /** The peer's dm_policy (the default when they saved no profile). */
  dm_policy: string;
}

/** The dm_policy values that admit a sender who is the peer's friend, and one who is not. */
export interface AdmittingPolicies {
  friend: readonly string[];
  other: readonly string[];
}

/** A message to store: its id and time are given by the service. */
export interface NewMessage {
  id: string;
  senderId: string;
  peerId: string;
  body: string;
  filtered: boolean;
  at: Date;
}

/** What storing one message found: the facts that could refuse it, and the row when it was stored. */
export type StoreOutcome = SendFacts & { message: MessageRow | undefined };

/**
 * The assignments that move the sending side's newest-message time (migration 0021) to `at` in a
 * conversation row being updated; greatest() ignores the null of a side that never wrote.
 */
const sideTimes = (sender: string, at: string) =>
  `last_message_a_at = case when ${sender} = user_a_id then greatest(last_message_a_at, ${at}) else last_message_a_at end,
     last_message_b_at = case when ${sender} = user_b_id then greatest(last_message_b_at, ${at}) else last_message_b_at end`;

/** Built once: the text is a prepared statement's key, and the send path's hottest. */
const INSERT_MESSAGE_SQL = `with facts as (
   select ${friendsBetweenSql('$2::uuid', '$8::uuid')} as friends,
          ${blockBetweenSql('$2::uuid', '$8::uuid')} as blocked,
          ${dmPolicySql('$8::uuid')} as dm_policy
 ), target as (
   update conversations set last_message_at = greatest(last_message_at, $5),
     ${sideTimes('$2::uuid', '$5')}
   where user_a_id = $6 and user_b_id = $7 and not conversations.blocked
     and (select f.dm_policy = any(case when f.friends then $9::text[] else $10::text[] end) from facts f)
   returning id
 ), inserted as (
   insert into messages (id, conversation_id, sender_id, body, filtered, created_at)
   select $1::uuid, target.id, $2::uuid, $3::text, $4::boolean, $5::timestamptz from target
   returning id, conversation_id, sender_id, body, filtered, ${timeKeySql('created_at')} as created_key
 )
 select facts.friends, facts.blocked, facts.dm_policy, inserted.* from facts left join inserted on true`;

/**
 * INSERT_MESSAGE_SQL for several messages at once. Its conversations are locked first, in id order,
 * which the single-row statement need not do: two statements that each lock several could
 * otherwise wait for each other.
 */
const INSERT_MESSAGES_SQL = `with input as (
   select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::timestamptz[],
                        $6::uuid[], $7::uuid[], $8::uuid[])
     with ordinality as m(id, sender_id, body, filtered, at, user_a_id, user_b_id, peer_id, n)
 ), facts as (
   select m.*, ${friendsBetweenSql('m.sender_id', 'm.peer_id')} as friends,
          ${blockBetweenSql('m.sender_id', 'm.peer_id')} as blocked,
          ${dmPolicySql('m.peer_id')} as dm_policy
   from input m
 ), admitted as (
   select * from facts f where f.dm_policy = any(case when f.friends then $9::text[] else $10::text[] end)
 ), locked as (
   -- Each conversation once, locked in id order, so statements storing several cannot deadlock.
   select c.id, c.user_a_id, c.user_b_id from conversations c
   where (c.user_a_id, c.user_b_id) in (select user_a_id, user_b_id from admitted) and not c.blocked
   order by c.id for update
 ), target as (
   update conversations c set last_message_at = greatest(c.last_message_at, a.at),
     last_message_a_at = greatest(c.last_message_a_at, a.a_at), last_message_b_at = greatest(c.last_message_b_at, a.b_at)
   from locked l, (
     select user_a_id, user_b_id, max(at) as at, max(at) filter (where sender_id = user_a_id) as a_at,
            max(at) filter (where sender_id = user_b_id) as b_at
     from admitted group by user_a_id, user_b_id) a
   where c.id = l.id and a.user_a_id = l.user_a_id and a.user_b_id = l.user_b_id and not c.blocked
   returning c.id, c.user_a_id, c.user_b_id
 ), inserted as (
   insert into messages (id, conversation_id, sender_id, body, filtered, created_at)
   select a.id, t.id, a.sender_id, a.body, a.filtered, a.at
   from admitted a join target t on t.user_a_id = a.user_a_id and t.user_b_id = a.user_b_id
   returning id, conversation_id, sender_id, body, filtered, ${timeKeySql('created_at')} as created_key
 )
 select f.friends, f.blocked, f.dm_policy, i.* from facts f left join inserted i on i.id = f.id order by f.n`;

type OutcomeRow = SendFacts & { [K in keyof MessageRow]: MessageRow[K] | null };

/** A row of the statements: the message's columns are all null when it was not inserted. */
const outcomeOf = ({ friends, blocked, dm_policy, ...inserted }: OutcomeRow): StoreOutcome => ({
  friends,
  blocked,
  dm_policy,
  message: inserted.id === null ? undefined : (inserted as MessageRow),
});

/**
 * Stores a message in the pair's conversation and moves its activity time, in one statement that
 * needs no transaction, and answers with the facts that could refuse it, read in the same
 * statement, so a send is one round trip. Nothing is written (`message` undefined) when the peer's
 * dm_policy is not among `admitting`, the conversation is `blocked`, or the pair has none yet
 * (`ensureConversation` first). The update locks the conversation row, and a block or unblock
 * updates that row too (`refreshConversationBlock`), so a block committed while this waited is
 * seen: Postgres re-reads the row and `not blocked` no longer holds.
 */
export async function insertMessage(
  em: EntityManager,
  message: NewMessage,
  admitting: AdmittingPolicies,
): Promise<StoreOutcome> {
  const [userA, userB] = orderedPair(message.senderId, message.peerId);
  const [row] = await executeBound<OutcomeRow>(em, INSERT_MESSAGE_SQL, [
    message.id,
    message.senderId,
    message.body,
    message.filtered,
    message.at,
    userA,
    userB,
    message.peerId,
    admitting.friend,
    admitting.other,
  ]);
  if (!row) throw new Error('insertMessage: the statement answers one row');
  return outcomeOf(row);
}

/**
 * insertMessage for any number of messages, in one statement and one round trip, answering for
 * each message in order. A lone message takes insertMessage's statement, which does not lock
 * ahead and costs Postgres about a fifth less (pgbench, one message per statement).
 */
export async function insertMessages(
  em: EntityManager,
  messages: readonly NewMessage[],
  admitting: AdmittingPolicies,
): Promise<StoreOutcome[]> {
  if (messages.length === 1) return Promise.all(messages.map((m) => insertMessage(em, m, admitting)));
  const pairs = messages.map((message) => orderedPair(message.senderId, message.peerId));
  const rows = await executeBound<OutcomeRow>(em, INSERT_MESSAGES_SQL, [
    messages.map((message) => message.id),
    messages.map((message) => message.senderId),
    messages.map((message) => message.body),
    messages.map((message) => message.filtered),
    messages.map((message) => message.at),
    pairs.map(([userA]) => userA),
    pairs.map(([, userB]) => userB),
    messages.map((message) => message.peerId),
    admitting.friend,
    admitting.other,
  ]);
  if (rows.length !== messages.length)
    throw new Error('insertMessages: the statement answers a row per message');
  return rows.map(outcomeOf);
}

/** Sets the pair's conversation's `blocked` from the blocks between them (in the block's transaction). */
export async function refreshConversationBlock(em: EntityManager, a: string, b: string): Promise<void> {
  await executeBound(
    em,
    `update conversations set blocked = ${blockBetweenSql('$1', '$2')}
     where user_a_id = $1 and user_b_id = $2`,
    orderedPair(a, b),
  );
}

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
 * first after the key in `$2`, `$3`, at most `limit` (SQL) rows. The chat benchmark's pgbench
 * ceiling runs it alone.
 */
export const historyPageSql = (conversation: string, limit: string) =>
  `select m.id, m.conversation_id, m.sender_id, m.body, m.filtered, ${timeKeySql('m.created_at')} as created_key
  from messages m
  where m.conversation_id = ${conversation} and ${beforeTimeIdKey('m.created_at', 'm.id')}
  order by m.created_at desc, m.id desc
  limit ${limit}`;

/**
 * One history read in one statement: the pair's conversation, a page of it, and the reader's read
 * mark moved to `at`, but only when the peer wrote after the mark (the side's newest-message time
 * in the conversation row, migration 0021), so a read that changes no unread count writes
 * nothing. Built once: the text is a prepared statement's key.
 */
const HISTORY_READ_SQL = `with conv as (
   select id, blocked, case when user_a_id = $5 then last_message_a_at else last_message_b_at end as peer_wrote_at
   from conversations where user_a_id = $7 and user_b_id = $8
 ), marked as (
   update conversation_participants p
   set last_read_at = greatest(coalesce(p.last_read_at, '-infinity'), $6)
   from conv
   where p.conversation_id = conv.id and p.user_id = $1
     and conv.peer_wrote_at > coalesce(p.last_read_at, '-infinity')
   returning p.last_read_at
 ), page as (${historyPageSql('(select id from conv)', '$4')})
 select h.*, page.* from (select (select id from conv) as conv_id,
        coalesce((select blocked from conv), false) as blocked,
        ${userExistsSql('$5')} as peer_exists,
        (select last_read_at from marked) as moved_read_mark) h left join page on true
 order by page.created_key desc, page.id desc`;

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
  em: EntityManager,
  read: { reader: string; peer: string; before: Key; limit: number; at: Date },
): Promise<HistoryRead> {
  const [userA, userB] = orderedPair(read.reader, read.peer);
  const [keyTime, keyId] = timeIdKeyParams(read.before);
  const rows = await executeBound<HistoryRow>(em, HISTORY_READ_SQL, [
    read.reader,
    keyTime,
    keyId,
    read.limit,
    read.peer,
    read.at,
    userA,
    userB,
  ]);
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
  em: EntityManager,
  conversationId: string,
  userId: string,
): Promise<Date | undefined> {
  const [row] = await executeBound<{ last_read_at: Date | null }>(
    em,
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
  em: EntityManager,
  userId: string,
  page: { after: Key; limit: number },
): Promise<ConversationRow[]> {
  return executeBound<ConversationRow>(
    em,
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
