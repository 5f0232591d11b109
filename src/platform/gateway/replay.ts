import type { EventBus, Recovery } from '../bus.js';
import type { StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Connection } from './connection.js';
import { type DeliveryFilter, encodeEvent } from './topics.js';

/** Where a connection stands in a recorded topic's history once it joined it (docs/recovery.md). */
export interface CaughtUp {
  /** The position of the last event sent to it; absent when the history could not be read. */
  position?: StreamPosition;
  /** Set when the client asked to recover: whether every missed event was replayed. */
  recovered?: boolean;
}

export interface ReplayDeps {
  bus: EventBus;
  log: Logger;
  maxBufferedBytes: number;
  /** Event types a node consumes itself (Subscriptions.onUserEvent): never the client's. */
  consumedHere: (type: string) => boolean;
}

/**
 * Catches a connection up on a recorded topic it joins: the events it missed, then the live ones
 * that arrived meanwhile, in order and each once.
 */
export class Replay {
  constructor(private readonly deps: ReplayDeps) {}

  /** From now until its catch-up, the live events of `topic` wait for the replay of older ones. */
  hold(connection: Connection, topic: string): void {
    connection.held ??= new Map();
    connection.held.set(topic, []);
  }

  release(connection: Connection, topic: string): void {
    connection.held?.delete(topic);
    if (connection.held?.size === 0) connection.held = undefined;
  }

  /**
   * Sends the connection the events of `topic` after `since` when they are all still kept (those
   * its filter lets through), then the live events held meanwhile (those the replay did not already
   * carry), in order. Without `since`, or when the history cannot be read (Redis down), only the
   * held ones: the socket works, and the client learns from `recovered: false` to refetch through
   * the history routes.
   */
  async catchUp(
    connection: Connection,
    topic: string,
    since?: StreamPosition,
    filter?: DeliveryFilter,
  ): Promise<CaughtUp> {
    const { bus, log, consumedHere } = this.deps;
    let recovery: Recovery | undefined;
    try {
      recovery = since
        ? await bus.recover(topic, since)
        : { recovered: false, position: await bus.positionOf(topic) };
    } catch (err) {
      log.warn({ err }, 'the event history could not be read; the client refetches');
    }
    let position = recovery?.position;
    let replayedThrough = 0;
    if (recovery?.recovered) {
      replayedThrough = recovery.position.offset;
      for (const event of recovery.events) {
        if (consumedHere(event.t) || (filter && !filter(event.audience))) continue;
        if (!(await this.sendReplayed(connection, encodeEvent(topic, event)))) break;
      }
    }
    const held = connection.held?.get(topic) ?? [];
    this.release(connection, topic);
    for (const event of held) {
      if (event.position.offset <= replayedThrough) continue;
      connection.sendEncoded(event.bytes);
      position = event.position;
    }
    return { position, ...(since ? { recovered: recovery?.recovered === true } : {}) };
  }

  /** A replay may be a thousand frames: it goes out paced, never tripping the slow-consumer limit. */
  private async sendReplayed(connection: Connection, bytes: Uint8Array): Promise<boolean> {
    const below = this.deps.maxBufferedBytes / 2;
    if (connection.bufferedBytes > below) await connection.drained(below);
    return connection.sendPaced(bytes) === 'sent';
  }
}
