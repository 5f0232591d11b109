import { setTimeout as sleep } from 'node:timers/promises';
import { Encoder } from '@msgpack/msgpack';
import { type BusEvent, type EventAudience, type EventBus, isUserTopic, type Recovery } from '../bus.js';
import type { StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Connection } from './connection.js';

/** Decides per subscriber whether an event's audience includes it. */
export type DeliveryFilter = (audience: EventAudience | undefined) => boolean;

/**
 * Sees each event before it is sent to a topic's members, and returns true when it handled the
 * event on this node instead (Subscriptions.onUserEvent); the event is then sent to nobody.
 */
export type EventInterceptor = (topic: string, event: BusEvent, members: Iterable<Connection>) => boolean;

interface Topic {
  members: Map<Connection, DeliveryFilter | undefined>;
  /** The bus subscription; resolves once it is active. */
  subscription: Promise<() => Promise<void>>;
  /** On a recorded topic: the position of the last event delivered here, where a gap fill starts. */
  position?: StreamPosition;
  /** While a gap is filled from the history: the live events that arrived meanwhile, in order. */
  held?: BusEvent[];
  /**
   * Events were lost again while a fill ran (a publish failed, the subscription dropped): the
   * history it read may predate that, so another fill follows it.
   */
  refill?: boolean;
}

/** Gaps filled at once after a resubscription: a node may hold thousands of users' topics. */
const CONCURRENT_FILLS = 64;

/**
 * Reads of a gap's history before its members are told to refetch: after a Redis restart the
 * command connection may be back a moment after the subscriber, and a read refused meanwhile is
 * no reason to make every client refetch. Live events stay held while it retries.
 */
const FILL_READ_ATTEMPTS = 10;
const FILL_READ_RETRY_MS = 300;

const encoder = new Encoder({ ignoreUndefined: true });

/**
 * Fan-out: each node subscribes to a bus topic once, however many of its connections follow it,
 * and encodes each event once for all of them. The last local member leaving drops the bus
 * subscription, so a node only hears the topics its clients care about.
 */
export class TopicRouter {
  private readonly topics = new Map<string, Topic>();
  /** Topics waiting for a gap fill, and how many fills run (fill). */
  private readonly pendingFills: [string, Topic][] = [];
  private activeFills = 0;

  constructor(
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly intercept?: EventInterceptor,
  ) {
    bus.onResubscribed(() => this.fill([...this.topics.keys()]));
  }

  /** Resolves when events on the topic will reach the connection. */
  async add(connection: Connection, topic: string, filter?: DeliveryFilter): Promise<void> {
    let entry = this.topics.get(topic);
    if (!entry) {
      entry = {
        members: new Map(),
        subscription: this.bus.subscribe(
          topic,
          (event) => this.deliver(topic, event),
          () => this.fill([topic]),
        ),
      };
      this.topics.set(topic, entry);
    }
    entry.members.set(connection, filter);
    connection.topics ??= new Set();
    connection.topics.add(topic);
    await entry.subscription;
  }

  remove(connection: Connection, topic: string): void {
    connection.topics?.delete(topic);
    const entry = this.topics.get(topic);
    if (!entry?.members.delete(connection) || entry.members.size > 0) return;
    this.topics.delete(topic);
    entry.subscription
      .then((unsubscribe) => unsubscribe())
      .catch((err) => this.log.warn({ err, topic }, 'dropping a bus subscription failed'));
  }

  removeAll(connection: Connection): void {
    if (!connection.topics) return;
    for (const topic of [...connection.topics]) this.remove(connection, topic);
    connection.topics = undefined;
  }

  get topicCount(): number {
    return this.topics.size;
  }

  /**
   * A connection caught up on a recorded topic up to `position` (Replay.catchUp): before any live
   * event arrived, that is where the topic stands here.
   */
  caughtUp(topic: string, position: StreamPosition | undefined): void {
    const entry = this.topics.get(topic);
    if (!entry || !position) return;
    const known = entry.position;
    if (!known || (known.epoch === position.epoch && known.offset < position.offset))
      entry.position = position;
  }

  /**
   * Events of `topics` may not have reached this node: all of them after the subscriptions were
   * down for a while (docs/recovery.md, "A node cut off from Redis"), or one whose publish failed
   * (EventBus.subscribe). Each recorded one no fill holds yet holds its live events at once, so
   * none passes an older missed one, then is filled from its history, a few topics at a time.
   */
  private fill(topics: string[]): void {
    for (const topic of topics) {
      const entry = this.topics.get(topic);
      if (!entry || !this.bus.isRecorded(topic)) continue;
      if (entry.held) {
        entry.refill = true;
        continue;
      }
      entry.held = [];
      this.pendingFills.push([topic, entry]);
    }
    const next = async (): Promise<void> => {
      this.activeFills++;
      try {
        for (let gap = this.pendingFills.shift(); gap; gap = this.pendingFills.shift())
          await this.fillGap(...gap);
      } finally {
        this.activeFills--;
      }
    };
    // Each worker takes its first topic at once, so this starts one per topic up to the bound.
    while (this.activeFills < CONCURRENT_FILLS && this.pendingFills.length > 0) void next();
  }

  /**
   * Delivers what the topic's members missed, each event once and in order, then the live ones
   * held meanwhile; when the history no longer has it all (the epoch changed, trimmed, unreadable),
   * tells each member to refetch instead.
   */
  private async fillGap(topic: string, entry: Topic): Promise<void> {
    let recovery: Recovery | undefined;
    for (let attempt = 1; entry.position && !recovery && attempt <= FILL_READ_ATTEMPTS; attempt++) {
      try {
        recovery = await this.bus.recover(topic, entry.position);
      } catch (err) {
        if (attempt === FILL_READ_ATTEMPTS) {
          this.log.warn({ err, topic }, 'a gap could not be read from the event history; clients refetch');
        } else {
          await sleep(FILL_READ_RETRY_MS);
        }
      }
    }
    const held = entry.held ?? [];
    entry.held = undefined;
    if (this.topics.get(topic) !== entry) return;
    if (recovery?.recovered) {
      for (const event of recovery.events) this.send(topic, entry, event);
    } else {
      const bytes = encodeReset(topic, recovery?.position);
      for (const connection of entry.members.keys()) connection.sendEncoded(bytes);
    }
    if (recovery) entry.position = recovery.position;
    // Held events are all positioned (deliver holds no other); those the fill carried are skipped.
    const through = entry.position;
    for (const event of held) {
      const { epoch, offset } = event.position as StreamPosition;
      if (!(through && through.epoch === epoch && offset <= through.offset)) this.send(topic, entry, event);
    }
    if (entry.refill) {
      entry.refill = false;
      this.fill([topic]);
    }
  }

  private deliver(topic: string, event: BusEvent): void {
    const entry = this.topics.get(topic);
    if (!entry) return;
    if (entry.held && event.position) entry.held.push(event);
    else this.send(topic, entry, event);
  }

  private send(topic: string, entry: Topic, event: BusEvent): void {
    const { position } = event;
    if (position) entry.position = position;
    if (this.intercept?.(topic, event, entry.members.keys())) return;
    const bytes = encodeEvent(topic, event);
    for (const [connection, filter] of entry.members) {
      if (filter && !filter(event.audience)) continue;
      // A connection replaying missed events gets the live ones after the replay (Replay.catchUp).
      const held = position && connection.held?.get(topic);
      if (held) held.push({ position, bytes });
      else connection.queue(bytes);
    }
  }
}

/**
 * The client frame of an event: `{t, d}`, and for events of a recorded topic `pos`, their place
 * in it (docs/recovery.md): `{offset, epoch}` on the user's own topic, with `stream` (the topic's
 * name, e.g. `chat:<world_id>`) on the others.
 */
export function encodeEvent(topic: string, event: BusEvent): Uint8Array {
  const pos = event.position && (isUserTopic(topic) ? event.position : { ...event.position, stream: topic });
  return encoder.encode({ t: event.t, d: event.d, pos });
}

/**
 * The frame telling a member of a recorded topic that events it should have received are lost
 * (protocol/socket.ts, `stream.reset`): `stream` names the topic as in `pos` (absent for the user's
 * own), `position` is where the topic stands now, when the history could be read.
 */
function encodeReset(topic: string, position: StreamPosition | undefined): Uint8Array {
  const d = { ...(isUserTopic(topic) ? {} : { stream: topic }), ...(position ? { position } : {}) };
  return encoder.encode({ t: 'stream.reset', d });
}
