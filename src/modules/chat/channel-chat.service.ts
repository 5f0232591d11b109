import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { batchedStatement } from '../../platform/batcher.js';
import type { EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeOfKey } from '../../platform/cursor.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import {
  type ChannelMessageInput,
  type ChannelMessageRow,
  type ChannelStatements,
  type ChannelStoreOutcome,
  channelMessagesOf,
  channelRefusal,
  channelStatements,
  insertChannelMessages,
  type MessageValues,
} from './channel-chat.repository.js';
import type { ChannelNames, ChannelTarget, ChatChannel, ChatChannelResolver } from './chat-channel.js';
import { trimmedBody } from './message-body.js';
import type { Filtered } from './text-filter.js';

/** Every chat topic starts so; it is also the `stream` of chat events' positions (docs/recovery.md). */
export const CHAT_TOPIC_PREFIX = 'chat:';

/**
 * A channel's topic under chat's recorded prefix, from its canonical ids (as the database spells
 * them, so a join and a send under two spellings of one id meet on one topic): `chat:<world_id>`,
 * `chat:<world_id>:<room_id>`.
 */
export const chatTopic = (...ids: readonly string[]): string => `${CHAT_TOPIC_PREFIX}${ids.join(':')}`;

/** A channel's message as the API shows it: its channel's ids follow its own. */
export type ChannelMessage<Target extends ChannelTarget> = { id: string } & Target & {
    sender_id: string | null;
    body: string;
    created_at: string;
    filtered: boolean;
  };

type Page = { limit: number; before?: string | undefined };
type PageOf<Item> = { items: Item[]; next_cursor: string | null };

/** The pipeline bound to one kind: what the operations of the kind's module call. */
export interface ChannelChat<Names extends ChannelNames, Target extends ChannelTarget> {
  send(ctx: Ctx, names: Names, rawBody: string): Promise<ChannelMessage<Target>>;
  history(ctx: Ctx, names: Names, page: Page): Promise<PageOf<ChannelMessage<Target>>>;
}

export interface ChannelChatDeps {
  bus: EventBus;
  /** Messages per sender and window, over every channel together. */
  sendLimiter: RateLimiterAbstract;
  filter: (body: string) => Filtered;
  /** Statements storing messages that a kind runs at once (statementsAtOnce of the pool). */
  storeConcurrency: number;
  /** Told the number of messages each store statement took (a metric). */
  observeStoreBatch?: (size: number) => void;
}

/** The most messages one statement stores. */
const MESSAGES_PER_STATEMENT = 100;

interface Kind {
  resolver: ChatChannelResolver<ChannelNames, ChannelTarget>;
  statements: ChannelStatements;
  /**
   * Stores sends in batches (insertChannelMessages): while `storeConcurrency` statements of the
   * kind run, the sends made meanwhile wait and the next statement stores them all, each checked
   * by the access SQL for its own sender. A send on a quiet node runs at once, alone.
   */
  store: (ctx: Ctx, target: ChannelTarget, message: MessageValues) => Promise<ChannelStoreOutcome>;
}

const toMessage = <Target extends ChannelTarget>(
  target: Target,
  row: ChannelMessageRow,
): ChannelMessage<Target> => ({
  id: row.id,
  ...target,
  sender_id: row.sender_id,
  body: row.body,
  created_at: timeOfKey(row.created_key),
  filtered: row.filtered,
});

/** The error of a refusal the kind's access SQL answered. */
const refused = (kind: Kind, reason: string): Error =>
  kind.resolver.access?.refusal(reason) ??
  new Error(`Chat channel kind ${kind.resolver.kind} refused without access SQL.`);

/** The defined names of a request, in a fixed order, to find the kind they name. */
const namesKey = (names: readonly string[]) => [...names].sort().join(',');

/**
 * Channel chat (docs/chat.md): one pipeline for the chats of worlds, rooms, groups and any kind a
 * module adds with its resolver. A send is checked cheapest first, as a direct message is: the
 * body, the text filter, the sender's rate limit (so a flood of refused sends cannot load the
 * database), then the channel's resolver and the statement that stores the message (with the
 * kind's access SQL in it); the message goes out as a chat.message event on the channel's topic
 * once stored. History pages and joins resolve the channel the same way.
 */
export class ChannelChatService {
  /** The kinds by the names of their channels' fields, as a join names a channel. */
  private readonly kindsByNames = new Map<string, Kind>();
  private readonly kindNames = new Set<string>();

  constructor(private readonly deps: ChannelChatDeps) {}

  /** Adds a kind (its statements are built now) and answers the pipeline bound to it. */
  add<Names extends ChannelNames, Target extends ChannelTarget>(
    resolver: ChatChannelResolver<Names, Target>,
  ): ChannelChat<Names, Target> {
    const names = namesKey(resolver.names);
    if (this.kindNames.has(resolver.kind) || this.kindsByNames.has(names))
      throw new Error(
        `Chat channel kind ${resolver.kind} is added twice, or names its channels as another does.`,
      );
    const statements = channelStatements(resolver.kind, resolver.columns, resolver.access);
    const store = batchedStatement(
      (data, inputs: readonly ChannelMessageInput[]) => insertChannelMessages(data, statements, inputs),
      {
        maxSize: MESSAGES_PER_STATEMENT,
        maxInFlight: this.deps.storeConcurrency,
        ...(this.deps.observeStoreBatch ? { observe: this.deps.observeStoreBatch } : {}),
      },
    );
    const kind: Kind = {
      resolver: resolver as unknown as ChatChannelResolver<ChannelNames, ChannelTarget>,
      statements,
      store: (ctx, target, message) => store(ctx, { target, message }),
    };
    this.kindNames.add(resolver.kind);
    this.kindsByNames.set(names, kind);
    return {
      send: (ctx, channelNames, rawBody) =>
        this.send(ctx, kind, channelNames, rawBody) as Promise<ChannelMessage<Target>>,
      history: (ctx, channelNames, page) =>
        this.history(ctx, kind, channelNames, page) as Promise<PageOf<ChannelMessage<Target>>>,
    };
  }

  /** The channel a `chat.join` names, once the caller was found to use it. */
  async joinable(ctx: Ctx, names: ChannelNames): Promise<ChatChannel<ChannelTarget>> {
    const kind = this.kindNamed(names);
    const channel = await kind.resolver.resolve(ctx, names, 'join');
    const refusal = await channelRefusal(ctx.data, kind.statements, channel.target, callerOf(ctx).id);
    if (refusal !== null) throw refused(kind, refusal);
    return channel;
  }

  /** The topic a `chat.leave` names; nothing is checked. */
  topicNamed(names: ChannelNames): string {
    const { resolver } = this.kindNamed(names);
    if (!resolver.topicOf) throw new Error(`Chat channel kind ${resolver.kind} is not joined.`);
    return resolver.topicOf(names);
  }

  private async send(ctx: Ctx, kind: Kind, names: ChannelNames, rawBody: string) {
    const me = callerOf(ctx).id;
    const { body, filtered } = this.deps.filter(trimmedBody(rawBody));
    await consumeOrThrow(this.deps.sendLimiter, me, 'Too many messages; wait before sending more.');
    const channel = await kind.resolver.resolve(ctx, names, 'send');
    const stored = await this.store(ctx, kind, channel, { id: newId(), sender_id: me, body, filtered });
    const message = toMessage(channel.target, stored);
    await this.deps.bus.publishCommitted(
      channel.topic,
      { t: 'chat.message', d: message, audience: channel.audience },
      ctx.log,
    );
    return message;
  }

  private async store(
    ctx: Ctx,
    kind: Kind,
    channel: ChatChannel<ChannelTarget>,
    message: { id: string; sender_id: string; body: string; filtered: boolean },
  ): Promise<ChannelMessageRow> {
    try {
      const stored = await kind.store(ctx, channel.target, { ...message, at: ctx.now() });
      if (stored.refusal !== null) throw refused(kind, stored.refusal);
      if (!stored.row) throw new Error('A channel message was neither stored nor refused.');
      return stored.row;
    } catch (error) {
      // What the channel belongs to was deleted after it was resolved.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION))
        throw new AppError(ErrorCode.NOT_FOUND, 'This chat no longer exists.');
      throw error;
    }
  }

  /** A page of the channel's history, newest first; `before` is the previous page's next_cursor. */
  private async history(ctx: Ctx, kind: Kind, names: ChannelNames, page: Page) {
    const before = decodeCursor(page.before, isTimeIdKey, 'before');
    const channel = await kind.resolver.resolve(ctx, names, 'history');
    const { refusal, rows } = await channelMessagesOf(
      ctx.data,
      kind.statements,
      channel.target,
      callerOf(ctx).id,
      { before, limit: page.limit + 1 },
    );
    if (refusal !== null) throw refused(kind, refusal);
    return pageFrom(
      rows,
      page.limit,
      (row) => toMessage(channel.target, row),
      (row) => [row.created_key, row.id],
    );
  }

  /** The kind whose channels are named by exactly the names given (those not undefined). */
  private kindNamed(names: ChannelNames): Kind {
    const given = Object.keys(names).filter((name) => names[name] !== undefined);
    const kind = this.kindsByNames.get(namesKey(given));
    if (!kind) throw new Error(`No chat channel kind is named by ${given.join(', ')}.`);
    return kind;
  }
}
