import { Redis } from 'ioredis';
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
import { closeConnection, reportErrorsOncePerOutage, untilReady } from './redis-connection.js';
import {
  type DefinedScripts,
  defineScripts,
  EXPIRE_MANY_SCRIPT,
  historyMetaKey,
  historyStreamKey,
  INCR_SCRIPT,
} from './redis-scripts.js';

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

/** How long one reconnect attempt may wait for the TCP connection to a Redis that went silent. */
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * Reconnect attempts back off up to this delay and never give up, so a Redis that comes back is
 * used again within about half a second.
 */
const MAX_RECONNECT_DELAY_MS = 500;

/** `Kv` on Redis, shared by every node of the service. */
export class RedisKv implements Kv {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  // Created on first subscribe: a connection in subscribe mode cannot run other commands.
  private subscriber: Redis | undefined;
  private readonly channels = new Map<string, Channel>();
  private readonly onError: (error: unknown, context: string) => void;
  private readonly pingTimeoutMs: number;
  private readonly namespace: string;
  private closing: Promise<void> | undefined;

  /**
   * Creates the client, waits until it is ready and pings it, so a wrong URL or a dead Redis fails
   * here. Commands are refused while disconnected (see the constructor), so nothing may be sent
   * before this resolves.
   */
  static async connect(url: string, options: RedisKvOptions = {}): Promise<RedisKv> {
    const kv = new RedisKv(url, options);
    try {
      await untilReady(kv.redis, kv.pingTimeoutMs);
      await kv.ping();
      return kv;
    } catch (error) {
      await kv.close();
      throw error;
    }
  }

  constructor(url: string, options: RedisKvOptions = {}) {
    this.onError = options.onError ?? ((error, context) => console.error(`RedisKv: ${context}`, error));
    this.pingTimeoutMs = options.pingTimeoutMs ?? 1_000;
    this.namespace = options.namespace ?? '';
    // While Redis is down a command fails at once, and one that gets no answer fails after the
    // command timeout: callers answer 503 and rate limiters switch to their in-memory insurance
    // within a second. Nothing is queued while disconnected (that queue has no bound, and would run
    // writes long after their callers gave up), and a command in flight when the connection drops
    // fails at once rather than being resent later. Reconnecting never stops.
    // ioredis prefixes key arguments itself (scripts' KEYS included); channels are prefixed below.
    this.redis = new Redis(url, {
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
      keyPrefix: this.namespace,
      // Commands issued in the same tick (concurrent heartbeats, limiter checks) share one write.
      enableAutoPipelining: true,
    });
    reportErrorsOncePerOutage(this.redis, (error) => this.onError(error, 'command connection error'));
    defineScripts(this.redis);
  }

  /** The command connection, for libraries that need a raw ioredis client. */
  get client(): Redis {
    return this.redis;
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    // MGET with no keys is a Redis error.
    if (keys.length === 0) return [];
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
    const pipeline = this.redis.pipeline();
    for (const [key, value] of entries) pipeline.set(key, value, 'PX', ms);
    const results = await pipeline.exec();
    const failure = results?.find(([error]) => error);
    if (failure) throw failure[0];
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return this.redis.del(...keys);
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
    const batches: Promise<number[]>[] = [];
    for (let start = 0; start < keys.length; start += EXPIRE_BATCH) {
      const batch = keys.slice(start, start + EXPIRE_BATCH);
      batches.push(this.redis.eval(EXPIRE_MANY_SCRIPT, batch.length, ...batch, ms) as Promise<number[]>);
    }
    return (await Promise.all(batches)).flat().map((existed) => existed === 1);
  }

  ttl(key: string): Promise<number> {
    return this.redis.pttl(key);
  }

  async publish(channel: string, message: Uint8Array): Promise<void> {
    // A Buffer view over the same bytes: no copy, and ioredis sends it as binary.
    await this.redis.publish(
      this.namespace + channel,
      Buffer.from(message.buffer, message.byteOffset, message.byteLength),
    );
  }

  async publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    { maxLen, ttlMs }: HistoryLimits,
  ): Promise<StreamPosition[]> {
    if (channels.length === 0) return [];
    const scripts = this.redis as unknown as DefinedScripts;
    const keys = channels.flatMap((channel) => [historyMetaKey(channel), historyStreamKey(channel)]);
    const perChannel = channels.flatMap((channel) => [this.namespace + channel, newEpoch()]);
    const flat = await scripts.publishRecorded(
      keys.length,
      ...keys,
      Buffer.from(message.buffer, message.byteOffset, message.byteLength),
      maxLen,
      ttlMs,
      Date.now(),
      HISTORY_META_TTL_MS,
      ...perChannel,
    );
    return channels.map((_, i) => ({ offset: flat[2 * i] as number, epoch: flat[2 * i + 1] as string }));
  }

  async readHistory(channel: string, afterOffset: number, { maxLen }: HistoryLimits): Promise<HistoryRead> {
    // Buffers throughout: the messages are binary.
    const scripts = this.redis as unknown as DefinedScripts;
    const [epoch, offset, entries] = await scripts.readHistoryBuffer(
      historyMetaKey(channel),
      historyStreamKey(channel),
      afterOffset,
      maxLen,
      newEpoch(),
      HISTORY_META_TTL_MS,
    );
    return {
      position: { offset, epoch: epoch.toString() },
      entries: entries.map(([id, fields]) => {
        const field = (name: string) =>
          fields[fields.findIndex((f, i) => i % 2 === 0 && f.toString() === name) + 1];
        return {
          offset: Number.parseInt(id.toString(), 10),
          at: Number((field('t') as Buffer).toString()),
          message: new Uint8Array(field('d') as Buffer),
        };
      }),
    };
  }

  async hasSubscribers(channel: string): Promise<boolean> {
    const [, count] = (await this.redis.pubsub('NUMSUB', this.namespace + channel)) as [string, number];
    return count > 0;
  }

  async setAndPeek(
    key: string,
    value: string,
    ttlMs: number,
    peek: { channel: string; key: string },
  ): Promise<Peeked> {
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
    const channel = this.namespace + name;
    const subscription: Subscription = { handler };
    let entry = this.channels.get(channel);
    if (!entry) {
      const subscriptions = new Set<Subscription>();
      // One Redis SUBSCRIBE per channel, however many local handlers share it.
      const ready = this.subscriberConnection().subscribe(channel);
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

  async ping(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer PING within ${this.pingTimeoutMs} ms`)),
        this.pingTimeoutMs,
      );
    });
    try {
      const reply = await Promise.race([this.redis.ping(), timeout]);
      if (reply !== 'PONG') throw new Error(`Unexpected PING reply: ${reply}`);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.channels.clear();
      await Promise.all([closeConnection(this.redis), this.subscriber && closeConnection(this.subscriber)]);
    })();
    return this.closing;
  }

  private subscriberConnection(): Redis {
    if (this.subscriber) return this.subscriber;
    // Subscribe-mode commands are few and must not be batched with anything else. Unlike the
    // command connection this one queues while disconnected: subscribe() runs right after it is
    // created, and SUBSCRIBE and UNSUBSCRIBE must keep their order. The queue stays small and
    // short-lived: each queued command's caller gets the command timeout's error, and every failed
    // reconnect attempt empties the queue (maxRetriesPerRequest 0).
    const subscriber = this.redis.duplicate({ enableAutoPipelining: false, enableOfflineQueue: true });
    reportErrorsOncePerOutage(subscriber, (error) => this.onError(error, 'subscriber connection error'));
    subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) =>
      this.deliver(channel.toString(), message),
    );
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
    await this.subscriber?.unsubscribe(channel);
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
