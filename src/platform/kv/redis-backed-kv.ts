/**
 * What `Kv` does the same way on every Redis topology: single-key commands, histories, the local
 * side of pub/sub (one Redis subscription per channel shared by its handlers), the connection's
 * lifecycle. RedisKv (one server or a Sentinel-watched primary) and ClusterKv (a Redis Cluster)
 * supply what differs: multi-key commands, channel names, publishing and subscribing.
 */
import {
  checkInteger,
  checkMembers,
  checkVersioned,
  checkWindow,
  HISTORY_META_TTL_MS,
  type HistoryLimits,
  type HistoryRead,
  type Kv,
  newEpoch,
  type OrderedWindow,
  type Peeked,
  type PeekedWrite,
  type SetOptions,
  type StreamPosition,
  type VersionedMember,
} from './kv.js';
import { checkIncrement, checkTtl } from './memory-kv.js';
import type { RedisClient } from './redis-client.js';
import {
  closeConnection,
  pingWithin,
  type RedisKvOptions,
  reportErrorsOncePerOutage,
  untilReady,
} from './redis-connection.js';
import {
  type DefinedScripts,
  defineScripts,
  historyMetaKey,
  historyRead,
  historyStreamKey,
  INCR_SCRIPT,
  replaceVersionedArgs,
} from './redis-scripts.js';
import { SubscriberCommands } from './subscriber-commands.js';

/** A Buffer view over the same bytes: no copy, and ioredis sends it as binary. */
export function asBuffer(message: Uint8Array): Buffer {
  return Buffer.from(message.buffer, message.byteOffset, message.byteLength);
}

/** What the subscriber connection reports to the store that opened it. */
export interface SubscriberEvents {
  /** A message arrived on a channel (its full name on Redis). */
  deliver(channel: Buffer, message: Buffer): void;
  /** The full names of the channels subscribed now, to subscribe again after a reconnect. */
  channels(): string[];
  /** The subscriptions are back after a reconnect; messages published meanwhile are gone. */
  resubscribed(): void;
}

type Subscription = { handler: (message: Uint8Array) => void };

interface Channel {
  subscriptions: Set<Subscription>;
  /** Settles when Redis has confirmed the subscription; later subscribers wait on it too. */
  ready: Promise<unknown>;
}

export abstract class RedisBackedKv<Client extends RedisClient> implements Kv {
  readonly kind = 'redis' as const;
  private subscriber: Client | undefined;
  private readonly channels = new Map<string, Channel>();
  private readonly resubscribedListeners: (() => void)[] = [];
  protected readonly onError: (error: unknown, context: string) => void;
  private readonly pingTimeoutMs: number;
  protected readonly namespace: string;
  private closing: Promise<void> | undefined;
  // Once closing, the connection's subscriptions end with it, and a new connection would leak.
  private readonly subscriberCommands = new SubscriberCommands((command, channels) => {
    if (command === 'subscribe')
      return this.closing
        ? Promise.reject(new Error('RedisKv is closed'))
        : this.subscribeTo(this.subscriberConnection(), channels);
    return this.subscriber && !this.closing
      ? this.unsubscribeFrom(this.subscriber, channels)
      : Promise.resolve();
  });

  protected constructor(
    protected readonly redis: Client,
    options: RedisKvOptions,
  ) {
    this.onError = options.onError ?? ((error, context) => console.error(`RedisKv: ${context}`, error));
    this.pingTimeoutMs = options.pingTimeoutMs ?? 1_000;
    this.namespace = options.namespace ?? '';
    reportErrorsOncePerOutage(this.redis, (error) => this.onError(error, 'command connection error'));
    defineScripts(this.redis);
  }

  /**
   * Waits until the client is ready and pings it, so a wrong address or a dead Redis fails here;
   * closes the store when it does. Commands are refused while disconnected (redis-client.ts), so
   * nothing may be sent before this resolves.
   */
  protected async connected(): Promise<this> {
    try {
      await untilReady(this.redis, this.pingTimeoutMs);
      await this.ping();
      return this;
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** The command connection, for libraries that need a raw ioredis client. */
  get client(): Client {
    return this.redis;
  }

  abstract mget(keys: readonly string[]): Promise<(string | null)[]>;
  abstract msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void>;
  abstract del(...keys: string[]): Promise<number>;
  abstract expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]>;
  abstract publish(channel: string, message: Uint8Array): Promise<void>;
  abstract publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    limits: HistoryLimits,
  ): Promise<StreamPosition[]>;
  abstract hasSubscribers(channel: string): Promise<boolean>;
  abstract setAndPeek(writes: readonly PeekedWrite[]): Promise<Peeked[]>;

  /** A channel's full name on Redis, as the subscriber connection subscribes to it. */
  protected abstract channelName(channel: string): string;
  /** Creates the subscriber connection, reporting to `events`. */
  protected abstract openSubscriber(events: SubscriberEvents): Client;
  /** Subscribes `subscriber` to channels' full names; settles when Redis confirmed them all. */
  protected abstract subscribeTo(subscriber: Client, channels: string[]): Promise<unknown>;
  /** Unsubscribes `subscriber` from channels' full names; settles when Redis confirmed them all. */
  protected abstract unsubscribeFrom(subscriber: Client, channels: string[]): Promise<unknown>;

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  /** SET ... PX ... GET (Redis 6.2+): replace and read the previous value atomically. */
  swap(key: string, value: string, ttlMs: number): Promise<string | null> {
    return this.redis.set(key, value, 'PX', checkTtl(ttlMs), 'GET');
  }

  async set(key: string, value: string, options: SetOptions = {}): Promise<boolean> {
    const ttlMs = options.ttlMs === undefined ? undefined : checkTtl(options.ttlMs);
    const nx = options.onlyIfAbsent === true;
    const reply =
      ttlMs === undefined
        ? await (nx ? this.redis.set(key, value, 'NX') : this.redis.set(key, value))
        : await (nx
            ? this.redis.set(key, value, 'PX', ttlMs, 'NX')
            : this.redis.set(key, value, 'PX', ttlMs));
    return reply === 'OK';
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

  ttl(key: string): Promise<number> {
    return this.redis.pttl(key);
  }

  /** The scripts redis-scripts.ts defined on the command connection. */
  protected get scripts(): DefinedScripts {
    return this.redis as unknown as DefinedScripts;
  }

  /**
   * One call of a publishRecorded script for `channels`, whose history keys must all be in one
   * hash slot on a Cluster; answers each channel's position. `now` is the message's time in every
   * history it is recorded in.
   */
  protected async recordAndPublish(
    script: 'publishRecorded' | 'publishRecordedSharded',
    channels: readonly string[],
    message: { bytes: Buffer; now: number },
    { maxLen, ttlMs }: HistoryLimits,
  ): Promise<StreamPosition[]> {
    const keys = channels.flatMap((channel) => [historyMetaKey(channel), historyStreamKey(channel)]);
    const perChannel = channels.flatMap((channel) => [this.channelName(channel), newEpoch()]);
    const { bytes, now } = message;
    const args = [keys.length, ...keys, bytes, maxLen, ttlMs, now, HISTORY_META_TTL_MS, ...perChannel];
    const flat = await this.scripts[script](...args);
    return channels.map((_, i) => ({ offset: flat[2 * i] as number, epoch: flat[2 * i + 1] as string }));
  }

  async readHistory(channel: string, afterOffset: number, { maxLen }: HistoryLimits): Promise<HistoryRead> {
    // Buffers throughout: the messages are binary.
    return historyRead(
      await this.scripts.readHistoryBuffer(
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

  async subscribe(name: string, handler: (message: Uint8Array) => void): Promise<() => Promise<void>> {
    // After close() a new subscriber connection would leak, so refuse like any closed connection.
    if (this.closing) throw new Error('RedisKv is closed');
    const channel = this.channelName(name);
    const subscription: Subscription = { handler };
    let entry = this.channels.get(channel);
    if (!entry) {
      // One Redis subscription per channel, however many local handlers share it.
      entry = { subscriptions: new Set(), ready: this.subscriberCommands.add('subscribe', channel) };
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

  private subscriberConnection(): Client {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.openSubscriber({
      deliver: (channel, message) => this.deliver(channel.toString(), message),
      channels: () => [...this.channels.keys()],
      resubscribed: () => this.notifyResubscribed(),
    });
    reportErrorsOncePerOutage(subscriber, (error) => this.onError(error, 'subscriber connection error'));
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
    await this.subscriberCommands.add('unsubscribe', channel);
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

  // As for sets, ZADD and ZREM without members are Redis errors and an empty call a no-op. Every
  // member is given score 0, so Redis orders them by their bytes (kv.ts).
  async zadd(key: string, ...members: string[]): Promise<number> {
    checkMembers(members);
    if (members.length === 0) return 0;
    return this.redis.zadd(key, ...members.flatMap((member) => [0, member]));
  }

  async zrem(key: string, ...members: string[]): Promise<number> {
    checkMembers(members);
    if (members.length === 0) return 0;
    return this.redis.zrem(key, ...members);
  }

  async zrank(key: string, member: string): Promise<number | null> {
    checkMembers([member]);
    return this.redis.zrank(key, member);
  }

  zcard(key: string): Promise<number> {
    return this.redis.zcard(key);
  }

  async zrange(key: string, start: number, stop: number): Promise<string[]> {
    checkInteger('start', start);
    checkInteger('stop', stop);
    return this.redis.zrange(key, start, stop);
  }

  async zrangeAfter(key: string, bound: string, count: number): Promise<string[]> {
    checkMembers([bound]);
    checkInteger('count', count, 0);
    return this.redis.zrange(key, `(${bound}`, '+', 'BYLEX', 'LIMIT', 0, count);
  }

  async zcountBefore(key: string, bound: string): Promise<number> {
    checkMembers([bound]);
    return this.redis.zlexcount(key, '-', `(${bound}`);
  }

  async zwindowOfField(
    setKey: string,
    versionsKey: string,
    field: string,
    before: number,
    count: number,
  ): Promise<OrderedWindow> {
    checkWindow(setKey, versionsKey, before, count);
    const [start, size, members] = await this.scripts.fieldWindow(setKey, versionsKey, field, before, count);
    return { start, size, members };
  }

  async zreplaceVersioned(
    setKey: string,
    versionsKey: string,
    field: string,
    version: number,
    member: string | null,
  ): Promise<boolean> {
    const [applied] = await this.zreplaceVersionedMany(setKey, versionsKey, [{ field, version, member }]);
    return applied === true;
  }

  /** One script call (REPLACE_VERSIONED_SCRIPT): its keys share a hash tag, so on a Cluster too. */
  async zreplaceVersionedMany(
    setKey: string,
    versionsKey: string,
    entries: readonly VersionedMember[],
  ): Promise<boolean[]> {
    checkVersioned(setKey, versionsKey, entries);
    if (entries.length === 0) return [];
    const args = replaceVersionedArgs(entries);
    const applied = await this.scripts.replaceVersioned(setKey, versionsKey, ...args);
    return applied.map((flag) => flag === 1);
  }
}
