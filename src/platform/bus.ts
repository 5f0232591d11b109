import { Decoder, Encoder } from '@msgpack/msgpack';
import type { Kv } from './kv/kv.js';
import type { Logger } from './log.js';

/**
 * Who may receive an event, carried beside it on the bus and never sent to clients. The gateway
 * checks it per subscriber, so a privacy setting is honoured on every node.
 */
export interface EventAudience {
  /** The user the event is about; always allowed to see it. */
  subject?: string;
  visibility?: 'everyone' | 'friends' | 'nobody';
}

/** An event as published: the client frame `{t, d}` plus its audience. */
export interface BusEvent {
  t: string;
  d: unknown;
  audience?: EventAudience;
  /** The event's place in its topic's order, for receivers that deliver in order (chunk streams). */
  seq?: number;
}

const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder();

/**
 * Events go out on topics (`user:<id>`, `presence:<id>`, `world:<id>`, `room:<id>`) over the KV
 * store's pub/sub: Redis with REDIS_URL, so every node's gateway sees every event; in-process
 * otherwise. Services publish after their transaction committed.
 */
export class EventBus {
  constructor(private readonly kv: Kv) {}

  publish(topic: string, event: BusEvent): Promise<void> {
    return this.kv.publish(channel(topic), encoder.encode(event));
  }

  /**
   * Publishes an event about a change already committed: the change stands and the request that
   * made it succeeded, so a failed publish is logged rather than thrown.
   */
  async publishCommitted(topic: string, event: BusEvent, log: Pick<Logger, 'warn'>): Promise<void> {
    try {
      await this.publish(topic, event);
    } catch (err) {
      log.warn({ err, topic, event: event.t }, 'an event could not be published');
    }
  }

  /** Whether any node listens on the topic: publishers skip building events nobody would receive. */
  hasSubscribers(topic: string): Promise<boolean> {
    return this.kv.hasSubscribers(channel(topic));
  }

  subscribe(topic: string, handler: (event: BusEvent) => void): Promise<() => Promise<void>> {
    return this.kv.subscribe(channel(topic), (message) => handler(decoder.decode(message) as BusEvent));
  }
}

/**
 * A user's own topic: the gateway subscribes each of the user's authenticated connections to it,
 * so a service reaches all of a user's sockets on every node by publishing here.
 */
export function userTopic(userId: string): string {
  return `user:${userId}`;
}

function channel(topic: string): string {
  return `evt:${topic}`;
}
