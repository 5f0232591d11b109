import { Decoder, Encoder } from '@msgpack/msgpack';
import { InFlight } from './in-flight.js';
import { type HistoryLimits, type Kv, type Peeked, type StreamPosition, unframePositioned } from './kv/kv.js';
import type { Logger } from './log.js';

/**
 * Who may receive an event, carried beside it on the bus and never sent to clients. The gateway
 * checks it per subscriber, so a privacy setting is honoured on every node.
 */
export interface EventAudience {
  /** The user the event is about; always allowed to see it. */
  subject?: string;
  visibility?: 'everyone' | 'friends' | 'nobody';
  /**
   * Users who receive the event on their own topic, published with it: a subscription whose
   * filter honours this skips them, so a user on both topics gets it once (group roster events).
   */
  toOwnTopic?: readonly string[];
}

/** An event as published: the client frame `{t, d}` plus its audience. */
export interface BusEvent {
  t: string;
  d: unknown;
  audience?: EventAudience;
  /** The event's place in its topic's order, for receivers that deliver in order (chunk streams). */
  seq?: number;
  /** Set on events of recorded topics as they are received: their place in the topic's history. */
  position?: StreamPosition;
}

/** What a reconnecting reader of a recorded topic gets: every event after its position, or none. */
export type Recovery =
  | { recovered: true; events: BusEvent[]; position: StreamPosition }
  /** The events after its position are no longer all kept (or the history was lost): refetch. */
  | { recovered: false; position: StreamPosition };

/** An event and the topics it goes to, as a write announces it once committed. */
export interface Announcement {
  topics: string | readonly string[];
  event: BusEvent;
}

export interface PublishOptions {
  /**
   * Not recorded even on a recorded topic: only the sockets connected now receive it, and it never
   * takes a place in the history a reconnecting client recovers from. For state a client can
   * refetch, sent often enough to push real events out of a bounded history (read marks).
   */
  transient?: boolean;
}

const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder();

/** A KV write of `setAndPeek`; after it, `readKey` is read only when `topic` has listeners. */
export interface AnnouncedWrite {
  key: string;
  value: string;
  ttlMs: number;
  topic: string;
  readKey: string;
}

/**
 * Events go out on topics (`user:<id>`, `presence:<id>`, `world:<id>`, `room:<id>`) over the KV
 * store's pub/sub: Redis with REDIS_URL, so every node's gateway sees every event; in-process
 * otherwise. Services publish after their transaction committed.
 */
export class EventBus {
  /**
   * The users' own topics are recorded, and those a module asks for (`recordTopics`): each event
   * published there is kept (the last `history.maxLen`, for `history.ttlMs`) and numbered, so a
   * reconnecting client can be given what it missed. Publishes count in `inFlight` until they
   * are done: shutdown waits for them, including those a request started without awaiting.
   */
  constructor(
    private readonly kv: Kv,
    private readonly history: HistoryLimits,
    private readonly inFlight = new InFlight(),
    /** Told of each event that could not be published, by its type (the metrics' count of them). */
    private readonly onPublishFailure: (type: string) => void = () => undefined,
  ) {}

  /**
   * Channels of recorded topics with an event that could not be recorded (Redis unreachable, or a
   * primary failing over), by how many times: their histories are dropped once Redis answers
   * again, so a reconnecting reader is told `recovered: false` rather than that it missed nothing,
   * and every node's live readers of them are told too (`subscribe`'s `onHistoryLost`).
   */
  private readonly unrecorded = new Map<string, number>();
  private dropTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly recordedPrefixes = [USER_TOPIC_PREFIX];

  /** Records the topics starting with `prefix` from now on (a module's, at setup: chat rooms). */
  recordTopics(prefix: string): void {
    this.recordedPrefixes.push(prefix);
  }

  /** Whether the topic's events are kept and numbered: what a node missed of them can be recovered. */
  isRecorded(topic: string): boolean {
    return this.recordedPrefixes.some((prefix) => topic.startsWith(prefix));
  }

  /**
   * Publishes the event on each topic, encoded once; the recorded topics among them in one step
   * (Kv.publishRecorded: one Redis round trip and command however many users it goes to).
   */
  publish(topics: string | readonly string[], event: BusEvent, options: PublishOptions = {}): Promise<void> {
    const sent = this.send(topics, event, options).catch((error: unknown) => {
      this.onPublishFailure(event.t);
      throw error;
    });
    return this.inFlight.track(sent, () => `publish ${event.t}`);
  }

  private async send(
    topics: string | readonly string[],
    event: BusEvent,
    options: PublishOptions,
  ): Promise<void> {
    const bytes = encoder.encode(event);
    const recorded: string[] = [];
    const published: Promise<unknown>[] = [];
    for (const topic of typeof topics === 'string' ? [topics] : topics) {
      if (!options.transient && this.isRecorded(topic)) recorded.push(channel(topic));
      else published.push(this.kv.publish(channel(topic), bytes));
    }
    if (recorded.length > 0) published.push(this.publishRecorded(recorded, bytes));
    await Promise.all(published);
  }

  private async publishRecorded(channels: readonly string[], bytes: Uint8Array): Promise<void> {
    try {
      await this.kv.publishRecorded(channels, bytes, this.history);
    } catch (error) {
      for (const name of channels) this.unrecorded.set(name, (this.unrecorded.get(name) ?? 0) + 1);
      this.dropUnrecordedSoon();
      throw error;
    }
  }

  /** Retries dropping the unrecorded channels' histories until the store answers. */
  private dropUnrecordedSoon(): void {
    if (this.dropTimer || this.closed) return;
    this.dropTimer = setTimeout(async () => {
      const attempt = [...this.unrecorded];
      const names = attempt.map(([name]) => name);
      try {
        await this.kv.dropHistories(names);
        // The sockets that follow these topics live missed the events too, on every node: each
        // node refills them from the history just dropped, so they are told to refetch.
        await Promise.all(names.map((name) => this.kv.publish(name, HISTORY_LOST_MESSAGE)));
        // A channel that failed again meanwhile stays for the next attempt.
        for (const [name, failures] of attempt) {
          if (this.unrecorded.get(name) === failures) this.unrecorded.delete(name);
        }
      } catch {
        // Still unreachable: the next attempt follows.
      }
      this.dropTimer = undefined;
      if (this.unrecorded.size > 0) this.dropUnrecordedSoon();
    }, DROP_RETRY_MS);
    this.dropTimer.unref();
  }

  /** Stops retrying (the store is closing); histories not dropped by then expire with their TTL. */
  close(): void {
    this.closed = true;
    clearTimeout(this.dropTimer);
  }

  /**
   * Publishes an event about a change already committed: the change stands and the request that
   * made it succeeded, so a failed publish is logged rather than thrown.
   */
  async publishCommitted(
    topics: string | readonly string[],
    event: BusEvent,
    log: Pick<Logger, 'warn'>,
    options: PublishOptions = {},
  ): Promise<void> {
    try {
      await this.publish(topics, event, options);
    } catch (err) {
      log.warn({ err, topics, event: event.t }, 'an event could not be published');
    }
  }

  /**
   * publishCommitted for what one committed write announces, each event to its topics, all issued
   * in this turn and in this order (so Redis gets them in one pipeline, with auto-pipelining).
   */
  async publishAllCommitted(
    announcements: readonly Announcement[],
    log: Pick<Logger, 'warn'>,
  ): Promise<void> {
    await Promise.all(announcements.map(({ topics, event }) => this.publishCommitted(topics, event, log)));
  }

  /** Whether any node listens on the topic: publishers skip building events nobody would receive. */
  hasSubscribers(topic: string): Promise<boolean> {
    return this.kv.hasSubscribers(channel(topic));
  }

  /**
   * For each write: stores a KV value, then tells whether any node listens on `topic` and, only
   * when one does, reads `readKey`; all in one round trip (Kv.setAndPeek), for changes announced to
   * listeners only.
   */
  setAndPeek(writes: readonly AnnouncedWrite[]): Promise<Peeked[]> {
    return this.kv.setAndPeek(
      writes.map(({ key, value, ttlMs, topic, readKey }) => ({
        key,
        value,
        ttlMs,
        peek: { channel: channel(topic), key: readKey },
      })),
    );
  }

  /**
   * `onHistoryLost` is called, instead of `handler`, when events of this recorded topic could not
   * be published (a node cut off from Redis): a live reader missed them and nothing else tells it.
   */
  subscribe(
    topic: string,
    handler: (event: BusEvent) => void,
    onHistoryLost?: () => void,
  ): Promise<() => Promise<void>> {
    return this.kv.subscribe(channel(topic), (bytes) => {
      const { position, message } = unframePositioned(bytes);
      const event = decoder.decode(message) as BusEvent;
      if (event.t === HISTORY_LOST) {
        onHistoryLost?.();
        return;
      }
      if (position) event.position = position;
      handler(event);
    });
  }

  /**
   * Calls `listener` each time this node's subscriptions are active again after its pub/sub
   * connection was lost (a Redis restart or failover): the events published meanwhile never reached
   * it, and those of recorded topics are to be read with `recover`.
   */
  onResubscribed(listener: () => void): void {
    this.kv.onResubscribed(listener);
  }

  /**
   * The events of a recorded topic after `since`, when every one of them is still kept: same
   * epoch, no gap, none older than the history's TTL. A position ahead of the topic's (forged or
   * from a lost history) is not recovered either.
   */
  async recover(topic: string, since: StreamPosition): Promise<Recovery> {
    const { position, entries } = await this.kv.readHistory(channel(topic), since.offset, this.history);
    if (this.unrecorded.has(channel(topic))) return { recovered: false, position };
    const missed = position.offset - since.offset;
    const oldestAllowed = Date.now() - this.history.ttlMs;
    const complete =
      since.epoch === position.epoch &&
      missed >= 0 &&
      entries.length === missed &&
      (missed === 0 || (entries[0]?.offset === since.offset + 1 && (entries[0]?.at ?? 0) >= oldestAllowed));
    if (!complete) return { recovered: false, position };
    const events = entries.map(({ offset, message }) => {
      const event = decoder.decode(message) as BusEvent;
      event.position = { offset, epoch: position.epoch };
      return event;
    });
    return { recovered: true, events, position };
  }

  /** The position of a recorded topic now: a reader starting here misses nothing published later. */
  async positionOf(topic: string): Promise<StreamPosition> {
    return (await this.kv.readHistory(channel(topic), Number.MAX_SAFE_INTEGER, this.history)).position;
  }
}

/** The notice on a recorded topic whose history was dropped because events of it were not recorded. */
const HISTORY_LOST = 'bus.history_lost';
const HISTORY_LOST_MESSAGE = encoder.encode({ t: HISTORY_LOST });

/** How often an unrecorded channel's history is tried to be dropped while the store does not answer. */
const DROP_RETRY_MS = 250;

const USER_TOPIC_PREFIX = 'user:';

export function isUserTopic(topic: string): boolean {
  return topic.startsWith(USER_TOPIC_PREFIX);
}

/**
 * A user's own topic: the gateway subscribes each of the user's authenticated connections to it,
 * so a service reaches all of a user's sockets on every node by publishing here.
 */
export function userTopic(userId: string): string {
  return USER_TOPIC_PREFIX + userId;
}

/** The KV channel a topic's events travel on (and, on a Redis Cluster, the hash tag of its slot). */
export function channel(topic: string): string {
  return `evt:${topic}`;
}
