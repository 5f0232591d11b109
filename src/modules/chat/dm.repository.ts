import type { Privacy } from '../../../protocol/profiles.js';
import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { dmPolicySql } from '../profiles/index.js';
import { blockBetweenSql, friendsBetweenSql } from '../social/index.js';

/**
 * The SQL that stores direct messages (tables of migrations 0002 and 0011; dm-reads.repository.ts
 * reads them). A conversation is stored with its pair ordered (`user_a_id < user_b_id`, as the
 * uuids compare), so callers pass `orderedPair`.
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

/** Lowercase canonical uuids compare as text the way Postgres compares the uuids. */
export const orderedPair = (a: string, b: string): [string, string] => (a < b ? [a, b] : [b, a]);

/** The conversation of the pair, or undefined before its first message. */
export async function conversationOf(data: DataAccess, a: string, b: string): Promise<string | undefined> {
  const [row] = await executeBound<{ id: string }>(
    data,
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
  data: DataAccess,
  newId: string,
  a: string,
  b: string,
  at: Date,
): Promise<string | undefined> {
  const [userA, userB] = orderedPair(a, b);
  const [created] = await executeBound<{ id: string }>(
    data,
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
  return conversationOf(data, userA, userB);
}

/** What may refuse a direct message, read in the statement that stores it. */
export interface SendFacts {
  /** An accepted friendship joins sender and peer. */
  friends: boolean;
  /** Either of them blocked the other. */
  blocked: boolean;
  /** The peer's dm_policy (the default when they saved no profile). */
  dm_policy: Privacy['dm_policy'];
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

/** The policies that admit a sender, by whether they are the peer's friend (AdmittingPolicies). */
interface Admitting {
  admitting_friend: readonly string[];
  admitting_other: readonly string[];
}

interface InsertMessageParams extends Admitting {
  id: string;
  sender_id: string;
  peer_id: string;
  body: string;
  filtered: boolean;
  at: Date;
  user_a_id: string;
  user_b_id: string;
}

/** Built once: the text is a prepared statement's key, and the send path's hottest. */
const INSERT_MESSAGE = namedSql<InsertMessageParams>(`with facts as (
   select ${friendsBetweenSql(':sender_id::uuid', ':peer_id::uuid')} as friends,
          ${blockBetweenSql(':sender_id::uuid', ':peer_id::uuid')} as blocked,
          ${dmPolicySql(':peer_id::uuid')} as dm_policy
 ), target as (
   update conversations set last_message_at = greatest(last_message_at, :at),
     ${sideTimes(':sender_id::uuid', ':at')}
   where user_a_id = :user_a_id and user_b_id = :user_b_id and not conversations.blocked
     and (select f.dm_policy = any(case when f.friends then :admitting_friend::text[] else :admitting_other::text[] end)
          from facts f)
   returning id
 ), inserted as (
   insert into messages (id, conversation_id, sender_id, body, filtered, created_at)
   select :id::uuid, target.id, :sender_id::uuid, :body::text, :filtered::boolean, :at::timestamptz from target
   returning id, conversation_id, sender_id, body, filtered, ${timeKeySql('created_at')} as created_key
 )
 select facts.friends, facts.blocked, facts.dm_policy, inserted.* from facts left join inserted on true`);

interface InsertMessagesParams extends Admitting {
  ids: string[];
  sender_ids: string[];
  bodies: string[];
  filtered: boolean[];
  ats: Date[];
  user_a_ids: string[];
  user_b_ids: string[];
  peer_ids: string[];
}

/**
 * INSERT_MESSAGE for several messages at once, each parameter an array with an element per message.
 * Its conversations are locked first, in id order, which the single-row statement need not do: two
 * statements that each lock several could otherwise wait for each other.
 */
const INSERT_MESSAGES = namedSql<InsertMessagesParams>(`with input as (
   select * from unnest(:ids::uuid[], :sender_ids::uuid[], :bodies::text[], :filtered::boolean[],
                        :ats::timestamptz[], :user_a_ids::uuid[], :user_b_ids::uuid[], :peer_ids::uuid[])
     with ordinality as m(id, sender_id, body, filtered, at, user_a_id, user_b_id, peer_id, n)
 ), facts as (
   select m.*, ${friendsBetweenSql('m.sender_id', 'm.peer_id')} as friends,
          ${blockBetweenSql('m.sender_id', 'm.peer_id')} as blocked,
          ${dmPolicySql('m.peer_id')} as dm_policy
   from input m
 ), admitted as (
   select * from facts f
   where f.dm_policy = any(case when f.friends then :admitting_friend::text[] else :admitting_other::text[] end)
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
 select f.friends, f.blocked, f.dm_policy, i.* from facts f left join inserted i on i.id = f.id order by f.n`);

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
  data: DataAccess,
  message: NewMessage,
  admitting: AdmittingPolicies,
): Promise<StoreOutcome> {
  const [userA, userB] = orderedPair(message.senderId, message.peerId);
  const [row] = await executeNamed<OutcomeRow, InsertMessageParams>(data, INSERT_MESSAGE, {
    id: message.id,
    sender_id: message.senderId,
    peer_id: message.peerId,
    body: message.body,
    filtered: message.filtered,
    at: message.at,
    user_a_id: userA,
    user_b_id: userB,
    admitting_friend: admitting.friend,
    admitting_other: admitting.other,
  });
  if (!row) throw new Error('insertMessage: the statement answers one row');
  return outcomeOf(row);
}

/**
 * insertMessage for any number of messages, in one statement and one round trip, answering for
 * each message in order. A lone message takes insertMessage's statement, which does not lock
 * ahead and costs Postgres about a fifth less (pgbench, one message per statement).
 */
export async function insertMessages(
  data: DataAccess,
  messages: readonly NewMessage[],
  admitting: AdmittingPolicies,
): Promise<StoreOutcome[]> {
  if (messages.length === 1) return Promise.all(messages.map((m) => insertMessage(data, m, admitting)));
  const pairs = messages.map((message) => orderedPair(message.senderId, message.peerId));
  const rows = await executeNamed<OutcomeRow, InsertMessagesParams>(data, INSERT_MESSAGES, {
    ids: messages.map((message) => message.id),
    sender_ids: messages.map((message) => message.senderId),
    bodies: messages.map((message) => message.body),
    filtered: messages.map((message) => message.filtered),
    ats: messages.map((message) => message.at),
    user_a_ids: pairs.map(([userA]) => userA),
    user_b_ids: pairs.map(([, userB]) => userB),
    peer_ids: messages.map((message) => message.peerId),
    admitting_friend: admitting.friend,
    admitting_other: admitting.other,
  });
  if (rows.length !== messages.length)
    throw new Error('insertMessages: the statement answers a row per message');
  return rows.map(outcomeOf);
}

/** Sets the pair's conversation's `blocked` from the blocks between them (in the block's transaction). */
export async function refreshConversationBlock(data: DataAccess, a: string, b: string): Promise<void> {
  await executeBound(
    data,
    `update conversations set blocked = ${blockBetweenSql('$1', '$2')}
     where user_a_id = $1 and user_b_id = $2`,
    orderedPair(a, b),
  );
}
