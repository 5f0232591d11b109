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
 * INCRBY, and PEXPIRE only when the key did not exist before, in one atomic step. Checking EXISTS
 * (rather than comparing the result with the increment) stays right for a key that held 0.
 */
const INCR_SCRIPT = `
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if fresh and ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return value`;

/**
 * Kv.setAndPeek: KEYS[1] is set to ARGV[1] for ARGV[2] ms, then KEYS[2] is read only when the
 * channel ARGV[3] has subscribers. A missing key's GET is Lua's false, a nil in the reply.
 */
const SET_AND_PEEK_SCRIPT = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('PUBSUB', 'NUMSUB', ARGV[3])[2] == 0 then return {0} end
return {1, redis.call('GET', KEYS[2])}`;

const EXPIRE_MANY_SCRIPT = `
local existed = {}
for i, key in ipairs(KEYS) do existed[i] = redis.call('PEXPIRE', key, ARGV[1]) end
return existed`;

/**
 * A recorded publish to one or more channels. For each channel, a pair of KEYS: its history's meta
 * hash (epoch `e`, last offset `o`) and stream (entry id `<offset>-0`, fields `d` the message and
 * `t` the time in ms); ARGV: the message, max length, the stream's TTL ms, now, the meta hash's
 * TTL ms, then for each channel its name and the epoch to start with when it has none. A lost meta
 * hash starts a new epoch and drops the stream of the old one, whose ids the new offsets would
 * repeat. The meta hash outlives the stream (HISTORY_META_TTL_MS): a reader who missed nothing
 * while the stream expired is still told so. The message is published with its position in front
 * (kv.ts framePositioned). Answers each channel's offset and epoch, flat. The keys of several
 * channels are in several hash slots: this runs on one Redis, not a Redis Cluster.
 */
const PUBLISH_RECORDED_SCRIPT = `
local positions = {}
for i = 1, #KEYS / 2 do
  local meta, stream = KEYS[2 * i - 1], KEYS[2 * i]
  local epoch = redis.call('HGET', meta, 'e')
  if not epoch then
    epoch = ARGV[5 + 2 * i]
    redis.call('DEL', stream)
    redis.call('HSET', meta, 'e', epoch)
  end
  local offset = redis.call('HINCRBY', meta, 'o', 1)
  redis.call('XADD', stream, 'MAXLEN', ARGV[2], offset .. '-0', 'd', ARGV[1], 't', ARGV[4])
  redis.call('PEXPIRE', meta, ARGV[5])
  redis.call('PEXPIRE', stream, ARGV[3])
  redis.call('PUBLISH', ARGV[4 + 2 * i], offset .. ':' .. epoch .. ':' .. ARGV[1])
  positions[2 * i - 1] = offset
  positions[2 * i] = epoch
end
return positions`;

/**
 * The meta hash's epoch and offset and the stream's entries after ARGV[1], in one consistent read.
 * A missing history starts here (epoch ARGV[3], offset 0), so the position a reader is given is
 * the one the next publish continues.
 */
const READ_HISTORY_SCRIPT = `
local meta = redis.call('HMGET', KEYS[1], 'e', 'o')
if not meta[1] then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', ARGV[3], 'o', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {ARGV[3], 0, {}}
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {meta[1], tonumber(meta[2]), redis.call('XRANGE', KEYS[2], '(' .. ARGV[1] .. '-0', '+', 'COUNT', ARGV[2])}`;

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
    // A defined command runs by EVALSHA and has a Buffer-returning twin for binary replies.
    // The number of keys is the first argument: two per channel.
    this.redis.defineCommand('publishRecorded', { lua: PUBLISH_RECORDED_SCRIPT });
    this.redis.defineCommand('readHistory', { numberOfKeys: 2, lua: READ_HISTORY_SCRIPT });
    this.redis.defineCommand('setAndPeek', { numberOfKeys: 2, lua: SET_AND_PEEK_SCRIPT });
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

/**
 * QUIT when connected, so replies already on their way still arrive; otherwise, or when QUIT is not
 * answered within a second, just drop the socket. Never throws.
 */
async function closeConnection(connection: Redis): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 1_000);
    });
    try {
      await Promise.race([connection.quit(), timeout]);
    } catch {
      // Falls through to disconnect().
    } finally {
      clearTimeout(timer);
    }
  }
  // Harmless after a successful QUIT; stops any reconnecting in every other case.
  connection.disconnect();
}

/**
 * Resolves once `connection` is ready for commands; rejects after `timeoutMs` (naming the last
 * connection error, which never contains the URL's password) or when it was closed.
 */
function untilReady(connection: Redis, timeoutMs: number): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError: Error | undefined;
    const onError = (error: Error) => {
      lastError = error;
    };
    const settle = (error?: Error) => {
      clearTimeout(timer);
      connection.off('ready', onReady);
      connection.off('error', onError);
      connection.off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    const onReady = () => settle();
    const onEnd = () => settle(new Error('The Redis connection was closed before it was ready'));
    const timer = setTimeout(() => {
      const cause = lastError ? `: ${lastError.message}` : '';
      settle(new Error(`Redis was not ready within ${timeoutMs} ms${cause}`));
    }, timeoutMs);
    connection.on('ready', onReady);
    connection.on('error', onError);
    connection.on('end', onEnd);
  });
}

/**
 * ioredis emits an error for every failed reconnect attempt, several a second while Redis is down.
 * The first one of an outage is reported, the rest only once the connection was ready again. The
 * listener is needed anyway: without one ioredis prints each as "Unhandled error event".
 */
function reportErrorsOncePerOutage(connection: Redis, report: (error: Error) => void): void {
  let reported = false;
  connection.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    report(error);
  });
  connection.on('ready', () => {
    reported = false;
  });
}

/** The scripts as defined commands (readHistoryBuffer: bulk strings as Buffers). */
interface DefinedScripts {
  /** Each channel's offset and epoch, flat. */
  publishRecorded(...args: (string | number | Buffer)[]): Promise<(number | string)[]>;
  readHistoryBuffer(...args: (string | number)[]): Promise<[Buffer, number, [Buffer, Buffer[]][]]>;
  /** One element when nobody listened; else the key's value second (null when missing). */
  setAndPeek(...args: (string | number)[]): Promise<[number, (string | null)?]>;
}

/** Both keys of a history share the channel name in braces: one hash slot, so one script may touch both. */
function historyMetaKey(channel: string): string {
  return `hist:{${channel}}:meta`;
}

function historyStreamKey(channel: string): string {
  return `hist:{${channel}}:stream`;
}
