import { Cluster } from 'ioredis';
import {
  HISTORY_META_TTL_MS,
  type HistoryLimits,
  type HistoryRead,
  type Kv,
  newEpoch,
  type Peeked,
  type StreamPosition,
} from './kv.js';
import { checkIncrement, checkTtl } from './memory-kv.js';
import { commandClient, type RedisClient, subscriberClient } from './redis-client.js';
import {
  closeConnection,
  pingWithin,
  reportErrorsOncePerOutage,
  untilReady,
  whenResubscribed,
} from './redis-connection.js';
import {
  type DefinedScripts,
  defineScripts,
  EXPIRE_MANY_SCRIPT,
  historyMetaKey,
  historyRead,
  historyStreamKey,
  INCR_SCRIPT,
} from './redis-scripts.js';
import { expireManyOnCluster, perSlot, setAndPeekOnCluster, setManyOnCluster } from './redis-slots.js';
import type { RedisTopology } from './redis-topology.js';

export interface RedisKvOptions {
  /** Called for connection errors and for subscribers that throw; defaults to console.error. */
  onError?: (error: unknown, context: string) => void;
  /** How long ping() waits before it rejects, and connect() for Redis to become ready. */
  pingTimeoutMs?: number;
  /**
   * A command not answered within this time rejects, so a Redis that hangs or went silent fails
   * requests quickly (503 to the caller) instead of holding them. REDIS_COMMAND_TIMEOUT_MS.
   */
  commandTimeoutMs?: number;
  /**
   * Prepended to every key and channel, so several deployments (or test runs) can share one
   * Redis without seeing each other's data. Libraries given `client` get it too.
   */
  namespace?: string;
}

interface Subscription {
  handler: (message: Uint8Array) => void;
}

interface Channel {
  subscriptions: Set<Subscription>;
  /** Settles when Redis has confirmed the SUBSCRIBE; later subscribers wait on it too. */
  ready: Promise<unknown>;
}

/**
 * Keys per EXPIRE_MANY_SCRIPT call: one command for a whole batch instead of a pipelined command
 * per key (whose per-command objects were tens of MiB of garbage for a node's 18,000 users),
 * while a single call stays short enough not to stall Redis for other clients.
 */
const EXPIRE_BATCH = 1000;

/** The default of REDIS_COMMAND_TIMEOUT_MS, for callers that do not pass the setting. */
const DEFAULT_COMMAND_TIMEOUT_MS = 500;

/**
 * `Kv` on Redis, shared by every node of the service: one server, a Sentinel-watched primary or a
 * Redis Cluster. On a Cluster every multi-key command and script runs once per hash slot, and
 * pub/sub is sharded (SPUBLISH / SSUBSCRIBE), so an event reaches only the shard its channel
 * hashes to instead of every node of the Cluster.
 */
export class RedisKv implements Kv {
  readonly kind = 'redis' as const;
  private readonly redis: RedisClient;
  /** On a Redis Cluster: commands split by hash slot, channels hash-tagged and sharded. */
  private readonly sharded: boolean;
  private subscriber: RedisClient | undefined;
  private readonly channels = new Map<string, Channel>();
  private readonly resubscribedListeners: (() => void)[] = [];
  private readonly onError: (error: unknown, context: string) => void;
  private readonly pingTimeoutMs: number;
  private readonly namespace: string;
  private closing: Promise<void> | undefined;

  /**
   * Creates the client, waits until it is ready and pings it, so a wrong URL or a dead Redis fails
   * here. Commands are refused while disconnected (see the constructor), so nothing may be sent
   * before this resolves.
   */
  static async connect(redis: RedisTopology | string, options: RedisKvOptions = {}): Promise<RedisKv> {
    const kv = new RedisKv(redis, options);
    try {
      await untilReady(kv.redis, kv.pingTimeoutMs);
      await kv.ping();
      return kv;
    } catch (error) {
      await kv.close();
      throw error;
    }
  }

  constructor(redis: RedisTopology | string, options: RedisKvOptions = {}) {
    this.onError = options.onError ?? ((error, context) => console.error(`RedisKv: ${context}`, error));
    this.pingTimeoutMs = options.pingTimeoutMs ?? 1_000;
    this.namespace = options.namespace ?? '';
    this.redis = commandClient(typeof redis === 'string' ? { kind: 'server', url: redis } : redis, {
      commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      keyPrefix: this.namespace,
    });
    this.sharded = this.redis instanceof Cluster;
    reportErrorsOncePerOutage(this.redis, (error) => this.onError(error, 'command connection error'));
    defineScripts(this.redis);
  }

  /** The command connection, for libraries that need a raw ioredis client. */
  get client(): RedisClient {
    return this.redis;
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    // MGET with no keys is a Redis error.
    if (keys.length === 0) return [];
    if (this.sharded) return perSlot(keys, this.namespace, (slotKeys) => this.redis.mget(...slotKeys));
    return this.redis.mget(...keys);
  }

  /** SET ... PX ... GET (Redis 6.2+): replace and read the previous value atomically. */
  swap(key: string, value: string, ttlMs: number): Promise<string | null> {
    return this.redis.set(key, value, 'PX', checkTtl(ttlMs), 'GET');
  }

  async set(
    key: string,
    value: string,
    options: { ttlMs?: number; onlyIfAbsent?: boolean } = {},
  ): Promise<boolean> {
    const ttlMs = options.ttlMs === undefined ? undefined : checkTtl(options.ttlMs);
    let reply: string | null;
    if (ttlMs === undefined) {
      reply = options.onlyIfAbsent
        ? await this.redis.set(key, value, 'NX')
        : await this.redis.set(key, value);
    } else {
      reply = options.onlyIfAbsent
        ? await this.redis.set(key, value, 'PX', ttlMs, 'NX')
        : await this.redis.set(key, value, 'PX', ttlMs);
    }
    return reply === 'OK';
  }

  async msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void> {
    const ms = checkTtl(ttlMs);
    if (entries.length === 0) return;
    if (this.sharded) return setManyOnCluster(this.redis as Cluster, entries, this.namespace, ms);
    const pipeline = this.redis.pipeline();
    for (const [key, value] of entries) pipeline.set(key, value, 'PX', ms);
    const failure = (await pipeline.exec())?.find(([error]) => error);
    if (failure) throw failure[0];
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    if (!this.sharded) return this.redis.del(...keys);
    // One DEL per key (auto-pipelined per node): a Cluster refuses a DEL across slots.
    const counts = await Promise.all(keys.map((key) => this.redis.del(key)));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async incr(key: string, options: { by?: number; ttlMs?: number } = {}): Promise<number> {
    const by = checkIncrement(options.by ?? 1);
    const ttlMs = options.ttlMs === undefined ? '' : String(checkTtl(options.ttlMs));
    // Redis caches compiled scripts by hash, so sending this short body each time costs only bytes.
    return (await this.redis.eval(INCR_SCRIPT, 1, key, by, ttlMs)) as number;
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.pexpire(key, checkTtl(ttlMs))) === 1;
  }

  async expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]> {
    const ms = checkTtl(ttlMs);
    if (this.sharded) return expireManyOnCluster(this.redis as Cluster, keys, this.namespace, ms);
    const batches: Promise<number[]>[] = [];
    for (let start = 0; start < keys.length; start += EXPIRE_BATCH) {
      const batch = keys.slice(start, start + EXPIRE_BATCH);
      batches.push(this.redis.eval(EXPIRE_MANY_SCRIPT, batch.length, ...batch, ms) as Promise<number[]>);
    }
    return (await Promise.all(batches)).flat().map((flag) => flag === 1);
  }

  ttl(key: string): Promise<number> {
    return this.redis.pttl(key);
  }

  async publish(channel: string, message: Uint8Array): Promise<void> {
    // A Buffer view over the same bytes: no copy, and ioredis sends it as binary.
    const bytes = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
    // SPUBLISH's channel is a key to ioredis, which adds the prefix itself.
    if (this.sharded) await this.redis.spublish(`{${channel}}`, bytes);
    else await this.redis.publish(this.namespace + channel, bytes);
  }

  async publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    { maxLen, ttlMs }: HistoryLimits,
  ): Promise<StreamPosition[]> {
    if (channels.length === 0) return [];
    const scripts = this.redis as unknown as DefinedScripts;
    const bytes = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
    const now = Date.now();
    const publish = async (slotChannels: readonly string[]): Promise<StreamPosition[]> => {
      const keys = slotChannels.flatMap((channel) => [historyMetaKey(channel), historyStreamKey(channel)]);
      const perChannel = slotChannels.flatMap((channel) => [this.channelName(channel), newEpoch()]);
      const args = [keys.length, ...keys, bytes, maxLen, ttlMs, now, HISTORY_META_TTL_MS, ...perChannel];
      const flat = this.sharded
        ? await scripts.publishRecordedSharded(...args)
        : await scripts.publishRecorded(...args);
      return slotChannels.map((_, i) => ({
        offset: flat[2 * i] as number,
        epoch: flat[2 * i + 1] as string,
      }));
    };
    if (!this.sharded) return publish(channels);
    // On a Cluster, one call per slot (a direct message to two users is two calls, in parallel),
    // split by the hash tag their keys and channel share.
    const tags = channels.map((channel) => `{${channel}}`);
    return perSlot(tags, this.namespace, (_, indexes) =>
      publish(indexes.map((index) => channels[index] as string)),
    );
  }

  async readHistory(channel: string, afterOffset: number, { maxLen }: HistoryLimits): Promise<HistoryRead> {
    // Buffers throughout: the messages are binary.
    const scripts = this.redis as unknown as DefinedScripts;
    return historyRead(
      await scripts.readHistoryBuffer(
        historyMetaKey(channel),
        historyStreamKey(channel),
        afterOffset,
        maxLen,
        newEpoch(),
        HISTORY_META_TTL_MS,
      ),
    );
  }

  async dropHistories(channels: readonly string[]): Promise<void> {
    await this.del(...channels.flatMap((channel) => [historyMetaKey(channel), historyStreamKey(channel)]));
  }

  async hasSubscribers(channel: string): Promise<boolean> {
    if (this.sharded)
      return (await (this.redis as unknown as DefinedScripts).shardSubscribers(`{${channel}}`)) > 0;
    const [, count] = (await this.redis.pubsub('NUMSUB', this.namespace + channel)) as [string, number];
    return count > 0;
  }

  async setAndPeek(
    key: string,
    value: string,
    ttlMs: number,
    peek: { channel: string; key: string },
  ): Promise<Peeked> {
    if (this.sharded) {
      const listened = () => this.hasSubscribers(peek.channel);
      return setAndPeekOnCluster(this.redis as Cluster, key, value, checkTtl(ttlMs), peek.key, listened);
    }
    const scripts = this.redis as unknown as DefinedScripts;
    const [listened, read] = await scripts.setAndPeek(
      key,
      peek.key,
      value,
      checkTtl(ttlMs),
      this.namespace + peek.channel,
    );
    return { listened: listened === 1, value: read ?? null };
  }

  async subscribe(name: string, handler: (message: Uint8Array) => void): Promise<() => Promise<void>> {
    // After close() a new subscriber connection would leak, so refuse like any closed connection.
    if (this.closing) throw new Error('RedisKv is closed');
    const channel = this.channelName(name);
    const subscription: Subscription = { handler };
    let entry = this.channels.get(channel);
    if (!entry) {
      const subscriptions = new Set<Subscription>();
      // One Redis SUBSCRIBE per channel, however many local handlers share it.
      const subscriber = this.subscriberConnection();
      const ready = this.sharded ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel);
      entry = { subscriptions, ready };
      this.channels.set(channel, entry);
    }
    entry.subscriptions.add(subscription);
    const current = entry;
    try {
      await current.ready;
    } catch (error) {
      current.subscriptions.delete(subscription);
      if (this.channels.get(channel) === current) this.channels.delete(channel);
      throw error;
    }
    return () => this.unsubscribe(channel, current, subscription);
  }

  onResubscribed(listener: () => void): void {
    this.resubscribedListeners.push(listener);
  }

  private notifyResubscribed(): void {
    for (const listener of this.resubscribedListeners) {
      try {
        listener();
      } catch (error) {
        this.onError(error, 'a resubscription listener threw');
      }
    }
  }

  ping(): Promise<void> {
    return pingWithin(this.redis, this.pingTimeoutMs);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.channels.clear();
      await Promise.all([closeConnection(this.redis), this.subscriber && closeConnection(this.subscriber)]);
    })();
    return this.closing;
  }

  /**
   * A channel's full name on Redis. On a Cluster it carries the channel in braces, the hash tag
   * of its history's keys (redis-scripts.ts), so a recorded publish's keys and channel share a slot.
   */
  private channelName(channel: string): string {
    return this.sharded ? `${this.namespace}{${channel}}` : this.namespace + channel;
  }

  private subscriberConnection(): RedisClient {
    if (this.subscriber) return this.subscriber;
    const subscriber = subscriberClient(this.redis);
    reportErrorsOncePerOutage(subscriber, (error) => this.onError(error, 'subscriber connection error'));
    const deliver = (channel: Buffer, message: Buffer) => this.deliver(channel.toString(), message);
    subscriber.on(this.sharded ? 'smessageBuffer' : 'messageBuffer', deliver);
    const channels = () => [...this.channels.keys()];
    whenResubscribed(subscriber, channels, () => this.notifyResubscribed());
    this.subscriber = subscriber;
    return subscriber;
  }

  /** Runs on the socket's data event, so every handler is isolated: a throw must not reach ioredis. */
  private deliver(channel: string, message: Buffer): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    // The parser may hand out a slice of a pooled buffer that it reuses later, so copy once.
    const payload = new Uint8Array(message);
    for (const subscription of [...entry.subscriptions]) {
      if (!entry.subscriptions.has(subscription)) continue;
      try {
        subscription.handler(payload);
      } catch (error) {
        this.onError(error, `subscriber of ${channel} threw`);
      }
    }
  }

  private async unsubscribe(channel: string, entry: Channel, subscription: Subscription): Promise<void> {
    // Calling the returned function twice, or after close(), is a no-op.
    if (!entry.subscriptions.delete(subscription) || entry.subscriptions.size > 0) return;
    if (this.channels.get(channel) !== entry) return;
    this.channels.delete(channel);
    // Commands on one connection run in order, so a SUBSCRIBE issued after this one still wins.
    if (this.sharded) await this.subscriber?.sunsubscribe(channel);
    else await this.subscriber?.unsubscribe(channel);
  }

  // SADD and SREM without members are Redis errors; like del(), an empty call is simply a no-op.
  async sadd(key: string, ...members: string[]): Promise<number> {
    if (members.length === 0) return 0;
    return this.redis.sadd(key, ...members);
  }

  async srem(key: string, ...members: string[]): Promise<number> {
    if (members.length === 0) return 0;
    return this.redis.srem(key, ...members);
  }

  smembers(key: string): Promise<string[]> {
    return this.redis.smembers(key);
  }
}
