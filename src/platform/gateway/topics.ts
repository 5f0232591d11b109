import { Encoder } from '@msgpack/msgpack';
import { type BusEvent, type EventAudience, type EventBus, isUserTopic } from '../bus.js';
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
}

const encoder = new Encoder({ ignoreUndefined: true });

/**
 * Fan-out: each node subscribes to a bus topic once, however many of its connections follow it,
 * and encodes each event once for all of them. The last local member leaving drops the bus
 * subscription, so a node only hears the topics its clients care about.
 */
export class TopicRouter {
  private readonly topics = new Map<string, Topic>();

  constructor(
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly intercept?: EventInterceptor,
  ) {}

  /** Resolves when events on the topic will reach the connection. */
  async add(connection: Connection, topic: string, filter?: DeliveryFilter): Promise<void> {
    let entry = this.topics.get(topic);
    if (!entry) {
      entry = {
        members: new Map(),
        subscription: this.bus.subscribe(topic, (event) => this.deliver(topic, event)),
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

  private deliver(topic: string, event: BusEvent): void {
    const entry = this.topics.get(topic);
    if (!entry || this.intercept?.(topic, event, entry.members.keys())) return;
    const bytes = encodeEvent(topic, event);
    const { position } = event;
    for (const [connection, filter] of entry.members) {
      if (filter && !filter(event.audience)) continue;
      // A connection replaying missed events gets the live ones after the replay (Replay.catchUp).
      const held = position && connection.held?.get(topic);
      if (held) held.push({ position, bytes });
      else connection.sendEncoded(bytes);
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
