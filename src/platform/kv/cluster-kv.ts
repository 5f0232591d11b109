import type { Cluster } from 'ioredis';
import type { HistoryLimits, Peeked, PeekedWrite, StreamPosition } from './kv.js';
import { checkTtl } from './memory-kv.js';
import { asBuffer, RedisBackedKv, type SubscriberEvents } from './redis-backed-kv.js';
import { clusterClient, shardedSubscriberClient } from './redis-client.js';
import { clientSettings, type RedisKvOptions, whenShardsResubscribed } from './redis-connection.js';
import { expireManyOnCluster, perSlot, setAndPeekOnCluster, setManyOnCluster } from './redis-slots.js';
import type { ClusterTopology } from './redis-topology.js';

/**
 * `Kv` on a Redis Cluster, shared by every node of the service. A command or script may touch only
 * one hash slot, so multi-key work runs once per slot (or a pipeline per primary, redis-slots.ts).
 * Pub/sub is sharded (SPUBLISH / SSUBSCRIBE), so an event reaches only the shard its channel hashes
 * to instead of every node of the Cluster; a channel carries its name in braces, the hash tag of
 * its history's keys (redis-scripts.ts), so a recorded publish's keys and channel share a slot.
 */
export class ClusterKv extends RedisBackedKv<Cluster> {
  /** Creates the client and waits until it answers a PING (or rejects, see `connected`). */
  static connect(topology: ClusterTopology, options: RedisKvOptions = {}): Promise<ClusterKv> {
    return new ClusterKv(topology, options).connected();
  }

  constructor(topology: ClusterTopology, options: RedisKvOptions = {}) {
    super(clusterClient(topology, clientSettings(options)), options);
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    // MGET with no keys is a Redis error.
    if (keys.length === 0) return [];
    return perSlot(keys, this.namespace, (slotKeys) => this.redis.mget(...slotKeys));
  }

  async msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void> {
    const ms = checkTtl(ttlMs);
    if (entries.length === 0) return;
    await setManyOnCluster(this.redis, entries, this.namespace, ms);
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    // One UNLINK (RedisKv.del) per key, each node's share pipelined by ioredis: a Cluster refuses
    // one across slots.
    const counts = await Promise.all(keys.map((key) => this.redis.unlink(key)));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]> {
    return expireManyOnCluster(this.redis, keys, this.namespace, checkTtl(ttlMs));
  }

  async publish(channel: string, message: Uint8Array): Promise<void> {
    // SPUBLISH's channel is a key to ioredis, which adds the namespace itself.
    await this.redis.spublish(this.hashTagged(channel), asBuffer(message));
  }

  async publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    limits: HistoryLimits,
  ): Promise<StreamPosition[]> {
    if (channels.length === 0) return [];
    const recorded = { bytes: asBuffer(message), now: Date.now() };
    // One call per slot (a direct message to two users is two calls, in parallel), split by the
    // hash tag their keys and channel share.
    const tags = channels.map((channel) => this.hashTagged(channel));
    return perSlot(tags, this.namespace, (_, indexes) => {
      const slotChannels = indexes.map((index) => channels[index] as string);
      return this.recordAndPublish('publishRecordedSharded', slotChannels, recorded, limits);
    });
  }

  async hasSubscribers(channel: string): Promise<boolean> {
    return (await this.scripts.shardSubscribers(this.hashTagged(channel))) > 0;
  }

  /** Each write's keys and channel are in different slots: the writes go one by one, concurrently. */
  async setAndPeek(writes: readonly PeekedWrite[]): Promise<Peeked[]> {
    const ttls = writes.map(({ ttlMs }) => checkTtl(ttlMs));
    return Promise.all(
      writes.map(({ key, value, peek }, index) =>
        setAndPeekOnCluster(this.redis, key, value, ttls[index] as number, peek.key, () =>
          this.hasSubscribers(peek.channel),
        ),
      ),
    );
  }

  /** A channel as a key ioredis prefixes with the namespace: its name in braces, its hash tag. */
  private hashTagged(channel: string): string {
    return `{${channel}}`;
  }

  /** The sharded subscriber takes full names: no key prefix is added to them. */
  protected channelName(channel: string): string {
    return this.namespace + this.hashTagged(channel);
  }

  protected openSubscriber(events: SubscriberEvents): Cluster {
    const subscriber = shardedSubscriberClient(this.redis);
    subscriber.on('smessageBuffer', events.deliver);
    whenShardsResubscribed(subscriber, events.resubscribed);
    return subscriber;
  }

  /** One SSUBSCRIBE per channel: the channels of one command must share a hash slot. */
  protected subscribeTo(subscriber: Cluster, channels: string[]): Promise<unknown> {
    return Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
  }

  /** As subscribeTo, one SUNSUBSCRIBE per channel. */
  protected unsubscribeFrom(subscriber: Cluster, channels: string[]): Promise<unknown> {
    return Promise.all(channels.map((channel) => subscriber.sunsubscribe(channel)));
  }
}
