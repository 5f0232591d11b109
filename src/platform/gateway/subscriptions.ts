import { userOf } from '../auth/principal.js';
import { type BusEvent, type EventBus, userTopic } from '../bus.js';
import { AppError, ErrorCode } from '../errors.js';
import type { StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Connection } from './connection.js';
import { type CaughtUp, Replay } from './replay.js';
import { type DeliveryFilter, TopicRouter } from './topics.js';

/** Runs on this node for an event on a user's own topic, for each of that user's connections here. */
export type UserEventHandler = (connection: Connection, event: BusEvent) => void;

export interface SubscriptionsDeps {
  bus: EventBus;
  log: Logger;
  maxSubscriptions: number;
  maxBufferedBytes: number;
}

/**
 * The topics each connection receives events from: its user's own topic, held by the gateway for
 * as long as the user is signed in on it, and those the client subscribed to, up to a limit.
 */
export class Subscriptions {
  private readonly userEventHandlers = new Map<string, UserEventHandler>();
  private readonly topics: TopicRouter;
  private readonly replay: Replay;

  constructor(private readonly deps: SubscriptionsDeps) {
    this.topics = new TopicRouter(deps.bus, deps.log, (topic, event, members) =>
      this.consumeUserEvent(topic, event, members),
    );
    this.replay = new Replay({
      bus: deps.bus,
      log: deps.log,
      maxBufferedBytes: deps.maxBufferedBytes,
      consumedHere: (type) => this.userEventHandlers.has(type),
    });
  }

  /**
   * Handles events of `type` published on a user's topic (`userTopic`) here, on every node, instead
   * of sending them to the user's clients: one module reacting to another's change on the sockets
   * it concerns (presence drops the subscriptions a new block forbids). Such types are never
   * client events.
   */
  onUserEvent(type: string, handler: UserEventHandler): void {
    if (this.userEventHandlers.has(type)) throw new Error(`User event ${type} already has a handler.`);
    this.userEventHandlers.set(type, handler);
  }

  /**
   * Delivers each topic's events to the connection (when its filter allows); resolves once all
   * are active. All or none: over the subscription limit, nothing is subscribed.
   */
  async subscribe(
    connection: Connection,
    entries: readonly { topic: string; filter?: DeliveryFilter }[],
  ): Promise<void> {
    const added = new Set(entries.map((e) => e.topic).filter((topic) => !connection.topics?.has(topic)));
    // The user's own topic is the gateway's, not a subscription the client asked for.
    const held = (connection.topics?.size ?? 0) - (userOf(connection.principal) ? 1 : 0);
    if (held + added.size > this.deps.maxSubscriptions) {
      throw new AppError(
        ErrorCode.SUBSCRIPTION_LIMIT,
        `A connection may hold at most ${this.deps.maxSubscriptions} subscriptions.`,
      );
    }
    await Promise.all(entries.map(({ topic, filter }) => this.topics.add(connection, topic, filter)));
  }

  /**
   * Subscribes the connection to a recorded topic (one a module asked the bus to record), first
   * sending what it missed since `since` as authenticating does for the user's own topic. A topic
   * the connection already follows is left as it is: nothing is replayed and the answer is empty.
   */
  async subscribeRecovering(
    connection: Connection,
    entry: { topic: string; filter?: DeliveryFilter },
    since?: StreamPosition,
  ): Promise<CaughtUp> {
    if (connection.topics?.has(entry.topic)) return {};
    this.replay.hold(connection, entry.topic);
    try {
      await this.subscribe(connection, [entry]);
    } catch (error) {
      this.replay.release(connection, entry.topic);
      throw error;
    }
    return this.caughtUp(
      entry.topic,
      await this.replay.catchUp(connection, entry.topic, since, entry.filter),
    );
  }

  unsubscribe(connection: Connection, topics: readonly string[]): void {
    for (const topic of topics) this.topics.remove(connection, topic);
  }

  /** Drops every topic of the connection: it closed, or now speaks for someone else. */
  leaveAll(connection: Connection): void {
    this.topics.removeAll(connection);
  }

  /**
   * Joins the user's own topic, holding its live events until `catchUpOwnTopic`; resolves once
   * they reach the connection. Not counted against the subscription limit.
   */
  joinOwnTopic(connection: Connection, userId: string): Promise<void> {
    const topic = userTopic(userId);
    // Live events wait from the start, so none can pass the replay of older ones.
    this.replay.hold(connection, topic);
    return this.topics.add(connection, topic);
  }

  async catchUpOwnTopic(connection: Connection, userId: string, since?: StreamPosition): Promise<CaughtUp> {
    const topic = userTopic(userId);
    return this.caughtUp(topic, await this.replay.catchUp(connection, topic, since));
  }

  /** Where a catch-up left the topic is where a gap fill starts (TopicRouter.fillGaps). */
  private caughtUp(topic: string, caught: CaughtUp): CaughtUp {
    this.topics.caughtUp(topic, caught.position);
    return caught;
  }

  /** The TopicRouter's interceptor: consumes the event types registered with `onUserEvent`. */
  private consumeUserEvent(topic: string, event: BusEvent, members: Iterable<Connection>): boolean {
    const handler = this.userEventHandlers.get(event.t);
    if (!handler) return false;
    for (const connection of members) {
      const user = userOf(connection.principal);
      if (!user || topic !== userTopic(user.id)) continue;
      try {
        handler(connection, event);
      } catch (err) {
        this.deps.log.error({ err, type: event.t }, 'user event handler failed');
      }
    }
    return true;
  }
}
