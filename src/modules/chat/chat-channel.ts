import type { EventAudience } from '../../platform/bus.js';
import type { Ctx } from '../../platform/context.js';
import type { AppError } from '../../platform/errors.js';
import type { DeliveryFilter } from '../../platform/gateway/topics.js';

/**
 * The contract between chat and the modules whose things have a chat (docs/chat.md, "Channel
 * chat"): chat runs one pipeline for every channel, and a resolver, owned by the module of the
 * channel's kind, says who may use a channel and where its messages and events go.
 */

/** What a channel is resolved for: a message sent to it, a page of its history, a socket joining it. */
export type ChatUse = 'send' | 'history' | 'join';

/**
 * A channel's ids, canonical, as its messages show them (`{world_id, room_id}`, `{group_id}`): each
 * is a column of chat's `messages` table that the kind's migration added with its foreign key, so
 * the messages go with the thing they belong to.
 */
export type ChannelTarget = Record<string, string | null>;

/**
 * The part a target column plays for a kind: `key` names one channel (its history pages read that
 * column's index); `stored` is written beside the key (a room's world, so the world's deletion
 * finds its rooms' messages); `null` stays null for every message of the kind, and its history
 * leaves out the messages that have one (the world's own chat leaves out its rooms').
 */
export type ColumnPart = 'key' | 'stored' | 'null';

/**
 * Who may use a kind's channels, when it is decided in the database: the check runs inside the
 * statement that stores or reads the messages, so it holds at that moment (a member kicked a moment
 * before cannot write) and the refusal comes back with its reason, without a second trip.
 */
export interface ChannelAccess {
  /**
   * SQL that is null when the user `userIdSql` names may use the channel `keySql` names (both
   * uuid expressions), and otherwise a text reason that `refusal` turns into the error. Only the
   * two expressions may be interpolated: the text is part of a prepared statement.
   */
  sql(keySql: string, userIdSql: string): string;
  refusal(reason: string): AppError;
}

/** One channel, as its resolver answers it. */
export interface ChatChannel<Target extends ChannelTarget> {
  target: Target;
  /**
   * Where its `chat.message` events are published: the channel's own topic, which `chat.join`
   * subscribes to (chat records topics under CHAT_TOPIC_PREFIX; a module recording its own topics
   * does so itself), or users' own topics for a kind nobody joins (its resolver refuses `join`).
   */
  topic: string | readonly string[];
  /** Carried by each of its events, where the delivery filters of joined sockets read it. */
  audience?: EventAudience | undefined;
  /** The filter of a joined socket's subscription, for its user. */
  deliveryFilter?: ((userId: string) => DeliveryFilter) | undefined;
  /**
   * Access that an event can end while a join is being made (a kick unsubscribes the user's
   * sockets): checked again once the subscription exists, so a kick committed in between is seen.
   */
  recheckJoin?: boolean | undefined;
}

/** The fields of a request that name a channel (`world_id`, `room_id`; `group_id`). */
export type ChannelNames = Record<string, string | undefined>;

/**
 * A kind of channel: its module implements it in one file and hands it to chat
 * (`chat.channelKind(resolver)`), which keeps it under `kind` and answers the pipeline its
 * operations call.
 */
export interface ChatChannelResolver<Names extends ChannelNames, Target extends ChannelTarget> {
  /** `world`, `room`, `group`: unique among the kinds. */
  kind: string;
  /** The request fields that name one of its channels, exactly as `chat.join` and `chat.leave` do. */
  names: readonly (keyof Names & string)[];
  /** Each target column and its part, in the order messages show them; one is the `key`. */
  columns: { readonly [Column in keyof Target & string]: ColumnPart };
  /** Access decided by the statements themselves, if any (else `resolve` decides it alone). */
  access?: ChannelAccess | undefined;
  /**
   * The channel `names` names, for `use`, or the refusal (throws an AppError: 404 NOT_FOUND or
   * 403 FORBIDDEN): one step, with `access` applied by the statement that follows.
   */
  resolve(ctx: Ctx, names: Names, use: ChatUse): ChatChannel<Target> | Promise<ChatChannel<Target>>;
  /**
   * The topic `chat.leave` names, from the names alone (canonical ids), without checking anything;
   * absent for a kind nobody joins.
   */
  topicOf?(names: Names): string;
}
