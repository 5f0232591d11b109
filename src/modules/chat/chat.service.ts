import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Conversation, Message } from '../../../protocol/chat.js';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { EventPayloads } from '../../../protocol/frames.js';
import { audienceSchema } from '../../../protocol/profiles.js';
import { batchedStatement } from '../../platform/batcher.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeOfKey } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import type { Outbox } from '../../platform/outbox.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import { privacyAdmits, type SocialApi } from '../social/index.js';
import {
  type AdmittingPolicies,
  ensureConversation,
  insertMessage,
  insertMessages,
  type MessageRow,
  type NewMessage,
  type StoreOutcome,
} from './dm.repository.js';
import { type ConversationRow, conversationsOf, readHistory } from './dm-reads.repository.js';
import { trimmedBody } from './message-body.js';
import type { ReadMarkAnnouncer } from './read-marks.js';
import type { Filtered } from './text-filter.js';

export interface ChatDeps {
  bus: EventBus;
  social: Pick<SocialApi, 'holdPair'>;
  /** Messages per sender and window, shared by the nodes through Redis when there is one. */
  sendLimiter: RateLimiterAbstract;
  filter: (body: string) => Filtered;
  /** How many statements storing messages may run at once; sends made meanwhile wait and share one. */
  storeConcurrency: number;
  /** Told how many sends each statement stored (a metric). */
  observeStoreBatch?: (size: number) => void;
  readMarks: Pick<ReadMarkAnnouncer, 'announce'>;
  /** `dm.message` is recorded in the transaction that stores the message, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'recordAll'>;
}

type Page = { limit: number; cursor?: string | undefined };
type PageOf<Item> = { items: Item[]; next_cursor: string | null };
type ChatEvent = { t: 'dm.message'; d: EventPayloads['dm.message'] };

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');
const forbidden = (message: string) => new AppError(ErrorCode.FORBIDDEN, message);
const blockedBetween = () => forbidden('A block between you and this user stands in the way.');
const throwBlocked = (): never => {
  throw blockedBetween();
};

const DM_MESSAGE = 'dm.message';

/** The most sends one statement stores; more waiting go in the next. */
const MESSAGES_PER_STATEMENT = 100;

/**
 * The peer's dm_policy values that let a sender who is their friend, and one who is not, message
 * them (social's privacy rule), spelled out for the statement that stores a message, which applies it.
 */
const ADMITTING: AdmittingPolicies = {
  friend: audienceSchema.options.filter((policy) => privacyAdmits(policy, true)),
  other: audienceSchema.options.filter((policy) => privacyAdmits(policy, false)),
};

/**
 * The stored message; otherwise the refusal its facts call for (a block either way comes first,
 * then the peer's dm_policy), or undefined when only the pair's conversation is missing.
 */
function storedOrRefusal(sent: StoreOutcome): MessageRow | undefined {
  if (sent.message) return sent.message;
  if (sent.blocked) throw blockedBetween();
  if (!privacyAdmits(sent.dm_policy, sent.friends))
    throw forbidden("This user's privacy settings do not let you message them.");
  return undefined;
}

/** A stored direct message as the API shows it (the chat benchmark's bare ceiling answers the same). */
export const toMessage = (row: MessageRow): Message => ({
  id: row.id,
  conversation_id: row.conversation_id,
  sender_id: row.sender_id,
  body: row.body,
  created_at: timeOfKey(row.created_key),
  filtered: row.filtered,
});

const toConversation = (row: ConversationRow): Conversation => ({
  conversation_id: row.conversation_id,
  peer: { id: row.peer_id, username: row.peer_username },
  last_message:
    row.m_id === null
      ? null
      : {
          id: row.m_id,
          conversation_id: row.conversation_id,
          sender_id: row.m_sender_id,
          body: row.m_body ?? '',
          created_at: new Date(row.m_created_at ?? 0).toISOString(),
          filtered: row.m_filtered === true,
        },
  unread_count: row.unread_count,
});

/**
 * Direct messages between two users: the rules of sending (docs/chat.md), the history and the
 * conversation list. Events go to both users' own topics after the write committed.
 */
export class ChatService {
  /**
   * Stores sends in batches (insertMessages): while `storeConcurrency` statements are running,
   * the sends made meanwhile wait and the next statement stores them all. Under load the pool's
   * connections would otherwise be held once per message, each for a round trip and a commit,
   * and they are what limits how many messages a node can store.
   */
  private readonly storeMessage: (ctx: Ctx, message: NewMessage) => Promise<StoreOutcome>;

  constructor(private readonly deps: ChatDeps) {
    this.storeMessage = batchedStatement(
      (data, messages: readonly NewMessage[]) =>
        deps.outbox.hasConsumers(DM_MESSAGE)
          ? this.insertRecorded(data, messages)
          : insertMessages(data, messages, ADMITTING),
      {
        maxSize: MESSAGES_PER_STATEMENT,
        maxInFlight: deps.storeConcurrency,
        observe: deps.observeStoreBatch,
      },
    );
  }

  /**
   * Checks run cheapest first: the input, then the sender's rate limit (so a flood of refused
   * sends cannot load the database either), then, in the statement that stores the message,
   * blocks and the peer's dm_policy; a peer that does not exist is found when storing (404).
   */
  async send(ctx: Ctx, userId: string, rawBody: string): Promise<Message> {
    const me = callerOf(ctx).id;
    const peer = peerOf(me, userId);
    const filtered = this.deps.filter(trimmedBody(rawBody));
    await consumeOrThrow(this.deps.sendLimiter, me, 'Too many messages; wait before sending more.');
    const message = await this.store(ctx, me, peer, filtered);
    // The answer does not wait for the event: it leaves once the message is stored either way, and
    // one that is lost is logged, never the send's error (publishCommitted). The sender's other
    // sockets show the message too; the sending one gets it as well and recognises it by id. Both
    // users' streams take it in one step.
    void this.notify(ctx, [peer, me], { t: 'dm.message', d: message });
    return message;
  }

  /**
   * A page of the conversation with `userId`, newest first, read in one statement that also moves
   * the caller's read mark to now when a message of the peer is newer than it. Only a moved mark
   * is told to the peer (coalesced: ReadMarkAnnouncer), and never across a block. Before the first
   * message there is no conversation: an empty page.
   */
  async history(ctx: Ctx, userId: string, page: { limit: number; before?: string | undefined }) {
    const me = callerOf(ctx).id;
    const peer = peerOf(me, userId);
    const before = decodeCursor(page.before, isTimeIdKey, 'before');
    const read = await readHistory(ctx.data, {
      reader: me,
      peer,
      before,
      limit: page.limit + 1,
      at: ctx.now(),
    });
    if (!read.peerExists) throw noSuchUser();
    if (read.conversationId && read.movedReadMark && !read.blocked) {
      await this.deps.readMarks.announce(peer, {
        conversation_id: read.conversationId,
        user_id: me,
        last_read_at: read.movedReadMark.toISOString(),
      });
    }
    return pageFrom(read.messages, page.limit, toMessage, (row) => [row.created_key, row.id]);
  }

  async conversations(ctx: Ctx, page: Page): Promise<PageOf<Conversation>> {
    const me = callerOf(ctx).id;
    const after = decodeCursor(page.cursor, isTimeIdKey);
    const rows = await conversationsOf(ctx.data, me, { after, limit: page.limit + 1 });
    return pageFrom(rows, page.limit, toConversation, (row) => [row.activity_key, row.conversation_id]);
  }

  /**
   * Stores the message: one statement once the pair has a conversation, shared with the sends
   * waiting with it (insertMessages, which reads what may refuse each message and writes
   * only those nothing refuses; a block written meanwhile cannot pass it). The first message
   * creates the conversation, in a transaction holding the pair's social lock, so a block being
   * written is waited for and the new conversation starts out `blocked` when one was; a refusal
   * rolls the conversation back. A peer deleted since (or never there: no relation, default
   * privacy) fails the conversation's foreign keys: 404.
   */
  private async store(ctx: Ctx, me: string, peer: string, { body, filtered }: Filtered): Promise<Message> {
    const at = ctx.now();
    const message = { id: newId(), senderId: me, peerId: peer, body, filtered, at };
    try {
      const row =
        storedOrRefusal(await this.storeMessage(ctx, message)) ??
        (await transaction(ctx.data, async (tx) => {
          await this.deps.social.holdPair(tx, me, peer);
          if (!(await ensureConversation(tx, newId(), me, peer, at))) throw noSuchUser();
          const stored = storedOrRefusal(await insertMessage(tx, message, ADMITTING)) ?? throwBlocked();
          if (this.deps.outbox.hasConsumers(DM_MESSAGE)) await this.record(tx, [stored]);
          return stored;
        }));
      return toMessage(row);
    } catch (error) {
      // The peer's account was deleted after it was read (with the conversation, if there was one).
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw noSuchUser();
      throw error;
    }
  }

  /**
   * insertMessages when something consumes `dm.message`: the messages stored and their events
   * commit together (a batch that fails leaves nothing written, as the batcher needs).
   */
  private insertRecorded(data: DataAccess, messages: readonly NewMessage[]): Promise<StoreOutcome[]> {
    return transaction(data, async (tx) => {
      const outcomes = await insertMessages(tx, messages, ADMITTING);
      await this.record(
        tx,
        outcomes.flatMap((outcome) => (outcome.message ? [outcome.message] : [])),
      );
      return outcomes;
    });
  }

  /** Records a `dm.message` event per stored message, in their transaction `tx`. */
  private async record(tx: DataAccess, rows: readonly MessageRow[]): Promise<void> {
    const events = rows.map((row): DomainEventData[typeof DM_MESSAGE] => ({ message: toMessage(row) }));
    await this.deps.outbox.recordAll(tx, DM_MESSAGE, events);
  }

  /** Tells users' sockets, on every node. The change is committed: a lost event is logged, not an error. */
  private notify(ctx: Ctx, userIds: string | readonly string[], event: ChatEvent): Promise<void> {
    const topics = typeof userIds === 'string' ? userTopic(userIds) : userIds.map(userTopic);
    return this.deps.bus.publishCommitted(topics, event, ctx.log);
  }
}

/** The peer's canonical id: an id that cannot name a user answers 404, the caller's own 422. */
function peerOf(me: string, userId: string): string {
  if (!isId(userId)) throw noSuchUser();
  const peer = canonicalId(userId);
  if (peer === me) {
    throw new AppError(ErrorCode.VALIDATION_FAILED, 'You cannot message yourself.', {
      errors: [{ path: 'user_id', message: 'must be another user' }],
    });
  }
  return peer;
}
