import type { Redis } from 'ioredis';
import type { HistoryLimits, Peeked, PeekedWrite, StreamPosition } from './kv.js';
import { checkTtl } from './memory-kv.js';
import { asBuffer, RedisBackedKv, type SubscriberEvents } from './redis-backed-kv.js';
import { serverClient, subscriberClient } from './redis-client.js';
import { clientSettings, type RedisKvOptions, whenResubscribed } from './redis-connection.js';
import { EXPIRE_MANY_SCRIPT } from './redis-scripts.js';
import type { SentinelTopology, ServerTopology } from './redis-topology.js';

/**
 * Keys per EXPIRE_MANY_SCRIPT call: one command for a whole batch instead of a pipelined command
 * per key (whose per-command objects were tens of MiB of garbage for a node's 18,000 users),
 * while a single call stays short enough not to stall Redis for other clients.
 */
const EXPIRE_BATCH = 1000;

/**
 * `Kv` on one Redis server or a Sentinel-watched primary, shared by every node of the service:
 * every key lives on the one server, so multi-key commands and scripts take any keys at once, and
 * a channel is the namespace followed by its name. A Redis Cluster is ClusterKv's.
 */
export class RedisKv extends RedisBackedKv<Redis> {
  /** Creates the client and waits until it answers a PING (or rejects, see `connected`). */
  static connect(
    redis: ServerTopology | SentinelTopology | string,
    options: RedisKvOptions = {},
  ): Promise<RedisKv> {
    return new RedisKv(redis, options).connected();
  }

  constructor(redis: ServerTopology | SentinelTopology | string, options: RedisKvOptions = {}) {
    const topology = typeof redis === 'string' ? { kind: 'server' as const, url: redis } : redis;
    super(serverClient(topology, clientSettings(options)), options);
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    // MGET with no keys is a Redis error.
    if (keys.length === 0) return [];
    return this.redis.mget(...keys);
  }

  async msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void> {
    const ms = checkTtl(ttlMs);
    if (entries.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const [key, value] of entries) pipeline.set(key, value, 'PX', ms);
    const failure = (await pipeline.exec())?.find(([error]) => error);
    if (failure) throw failure[0];
  }

  /** UNLINK: like DEL, but Redis frees a large value (a million-member ordered set) in the background. */
  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return this.redis.unlink(...keys);
  }

  async expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]> {
    const ms = checkTtl(ttlMs);
    const batches: Promise<number[]>[] = [];
    for (let start = 0; start < keys.length; start += EXPIRE_BATCH) {
      const batch = keys.slice(start, start + EXPIRE_BATCH);
      batches.push(this.redis.eval(EXPIRE_MANY_SCRIPT, batch.length, ...batch, ms) as Promise<number[]>);
    }
    return (await Promise.all(batches)).flat().map((flag) => flag === 1);
  }

  async publish(channel: string, message: Uint8Array): Promise<void> {
    await this.redis.publish(this.channelName(channel), asBuffer(message));
  }

  async publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    limits: HistoryLimits,
  ): Promise<StreamPosition[]> {
    if (channels.length === 0) return [];
    const recorded = { bytes: asBuffer(message), now: Date.now() };
    return this.recordAndPublish('publishRecorded', channels, recorded, limits);
  }

  async hasSubscribers(channel: string): Promise<boolean> {
    const [, count] = (await this.redis.pubsub('NUMSUB', this.channelName(channel))) as [string, number];
    return count > 0;
  }

  async setAndPeek(writes: readonly PeekedWrite[]): Promise<Peeked[]> {
    if (writes.length === 0) return [];
    const keys = writes.flatMap(({ key, peek }) => [key, peek.key]);
    const args = writes.flatMap(({ value, ttlMs, peek }) => [
      value,
      checkTtl(ttlMs),
      this.channelName(peek.channel),
    ]);
    const found = await this.scripts.setAndPeek(keys.length, ...keys, ...args);
    return writes.map((_, index) => ({
      listened: found[2 * index] === 1,
      value: (found[2 * index + 1] as string | null | undefined) ?? null,
    }));
  }

  /** Channels are not keys to ioredis, so the namespace is prepended here. */
  protected channelName(channel: string): string {
    return this.namespace + channel;
  }

  protected openSubscriber(events: SubscriberEvents): Redis {
    const subscriber = subscriberClient(this.redis);
    subscriber.on('messageBuffer', events.deliver);
    whenResubscribed(subscriber, events.channels, events.resubscribed);
    return subscriber;
  }

  protected subscribeTo(subscriber: Redis, channels: string[]): Promise<unknown> {
    return subscriber.subscribe(...channels);
  }

  protected unsubscribeFrom(subscriber: Redis, channels: string[]): Promise<unknown> {
    return subscriber.unsubscribe(...channels);
  }
}
