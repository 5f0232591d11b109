import {
  framePositioned,
  HISTORY_META_TTL_MS,
  type HistoryLimits,
  type HistoryRead,
  type Kv,
  newEpoch,
  type Peeked,
  type PeekedWrite,
  type SetOptions,
  type StreamPosition,
} from './kv.js';
import { MemoryKeyspace } from './memory-keyspace.js';

export interface MemoryKvOptions {
  /** Clock for TTLs; tests may inject a fake one. */
  now?: () => number;
  /** How often expired keys are swept out so memory does not grow with keys nobody reads again. */
  sweepIntervalMs?: number;
  /** Called when a subscriber throws; defaults to console.error. */
  onError?: (error: unknown, context: string) => void;
}

/** A recorded channel's history: a ring of its last messages (oldest first) and its position. */
interface History {
  epoch: string;
  offset: number;
  entries: HistoryRead['entries'];
  /** When it was last published to or read; the sweep drops it HISTORY_META_TTL_MS later. */
  usedAt: number;
  /** When its messages expire unless another is published (HistoryLimits.ttlMs). */
  entriesExpireAt: number;
}

interface Subscription {
  handler: (message: Uint8Array) => void;
}

/**
 * In-process `Kv` for a single node; mirrors the Redis semantics of `RedisKv`. Its keys and the
 * commands on sets and ordered sets are MemoryKeyspace's.
 */
export class MemoryKv extends MemoryKeyspace implements Kv {
  readonly kind = 'memory' as const;
  // A subscription record per subscribe() call, so one function subscribed twice is two subscribers.
  private readonly channels = new Map<string, Set<Subscription>>();
  private readonly histories = new Map<string, History>();
  private readonly onError: (error: unknown, context: string) => void;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: MemoryKvOptions = {}) {
    super(options.now ?? Date.now);
    this.onError = options.onError ?? ((error, context) => console.error(`MemoryKv: ${context}`, error));
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 10_000);
    // The sweep is housekeeping only; it must not keep the process alive.
    this.sweeper.unref();
  }

  async get(key: string): Promise<string | null> {
    this.assertOpen();
    return this.liveString(key)?.value ?? null;
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    this.assertOpen();
    // Like Redis MGET, a key holding a set reads as null rather than failing the whole batch.
    return keys.map((key) => {
      const value = this.live(key)?.value;
      return typeof value === 'string' ? value : null;
    });
  }

  async set(key: string, value: string, options: SetOptions = {}): Promise<boolean> {
    this.assertOpen();
    const expiresAt = options.ttlMs === undefined ? null : this.now() + checkTtl(options.ttlMs);
    if (options.onlyIfAbsent && this.live(key)) return false;
    // Like Redis SET, a plain set replaces the value and drops any previous TTL.
    this.entries.set(key, { value, expiresAt });
    return true;
  }

  async swap(key: string, value: string, ttlMs: number): Promise<string | null> {
    this.assertOpen();
    const expiresAt = this.now() + checkTtl(ttlMs);
    const previous = this.liveString(key)?.value ?? null;
    this.entries.set(key, { value, expiresAt });
    return previous;
  }

  async msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void> {
    this.assertOpen();
    const expiresAt = this.now() + checkTtl(ttlMs);
    for (const [key, value] of entries) this.entries.set(key, { value, expiresAt });
  }

  async del(...keys: string[]): Promise<number> {
    this.assertOpen();
    let count = 0;
    for (const key of keys) {
      if (this.live(key)) count++;
      this.entries.delete(key);
    }
    return count;
  }

  async incr(key: string, options: { by?: number; ttlMs?: number } = {}): Promise<number> {
    this.assertOpen();
    const by = checkIncrement(options.by ?? 1);
    const ttlMs = options.ttlMs === undefined ? undefined : checkTtl(options.ttlMs);
    const entry = this.liveString(key);
    if (!entry) {
      // Only a new key gets the TTL, matching INCRBY followed by PEXPIRE on a key that did not exist.
      this.entries.set(key, {
        value: String(by),
        expiresAt: ttlMs === undefined ? null : this.now() + ttlMs,
      });
      return by;
    }
    if (!/^-?\d+$/.test(entry.value)) throw new Error('ERR value is not an integer or out of range');
    const next = Number(entry.value) + by;
    if (!Number.isSafeInteger(next)) throw new Error('ERR increment or decrement would overflow');
    entry.value = String(next);
    return next;
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    const ms = checkTtl(ttlMs);
    const entry = this.live(key);
    if (!entry) return false;
    entry.expiresAt = this.now() + ms;
    return true;
  }

  async expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]> {
    this.assertOpen();
    const expiresAt = this.now() + checkTtl(ttlMs);
    return keys.map((key) => {
      const entry = this.live(key);
      if (entry) entry.expiresAt = expiresAt;
      return entry !== undefined;
    });
  }

  async ttl(key: string): Promise<number> {
    this.assertOpen();
    const entry = this.live(key);
    if (!entry) return -2;
    return entry.expiresAt === null ? -1 : entry.expiresAt - this.now();
  }

  async publish(channel: string, message: Uint8Array): Promise<void> {
    this.assertOpen();
    // Copy once, as Redis would: the caller may reuse its buffer after publish returns.
    const payload = new Uint8Array(message);
    // Delivery is deferred so a handler never runs inside the publisher's call stack.
    queueMicrotask(() => {
      // The subscriber set is read at delivery time, so an unsubscribe before delivery is honoured.
      const subscriptions = this.channels.get(channel);
      if (!subscriptions) return;
      for (const subscription of [...subscriptions]) {
        if (!subscriptions.has(subscription)) continue;
        try {
          subscription.handler(payload);
        } catch (error) {
          this.onError(error, `subscriber of ${channel} threw`);
        }
      }
    });
  }

  async publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    limits: HistoryLimits,
  ): Promise<StreamPosition[]> {
    this.assertOpen();
    const now = this.now();
    const positions: StreamPosition[] = [];
    for (const channel of channels) {
      const history = this.history(channel, now);
      const position = { offset: ++history.offset, epoch: history.epoch };
      // A copy, as Redis keeps its own: the caller may reuse its buffer.
      history.entries.push({ offset: position.offset, at: now, message: new Uint8Array(message) });
      if (history.entries.length > limits.maxLen)
        history.entries.splice(0, history.entries.length - limits.maxLen);
      history.entriesExpireAt = now + limits.ttlMs;
      await this.publish(channel, framePositioned(position, message));
      positions.push(position);
    }
    return positions;
  }

  async readHistory(channel: string, afterOffset: number, { maxLen }: HistoryLimits): Promise<HistoryRead> {
    this.assertOpen();
    const history = this.history(channel, this.now());
    const first = history.entries.findIndex((entry) => entry.offset > afterOffset);
    return {
      position: { offset: history.offset, epoch: history.epoch },
      entries: first < 0 ? [] : history.entries.slice(first, first + maxLen),
    };
  }

  async dropHistories(channels: readonly string[]): Promise<void> {
    for (const channel of channels) this.histories.delete(channel);
  }

  /** The channel's history, started (offset 0 of a new epoch) when missing, with expired messages gone. */
  private history(channel: string, now: number): History {
    let history = this.histories.get(channel);
    if (!history || history.usedAt + HISTORY_META_TTL_MS <= now) {
      history = { epoch: newEpoch(), offset: 0, entries: [], usedAt: now, entriesExpireAt: now };
      this.histories.set(channel, history);
    }
    if (history.entriesExpireAt <= now) history.entries = [];
    history.usedAt = now;
    return history;
  }

  async hasSubscribers(channel: string): Promise<boolean> {
    this.assertOpen();
    return this.channels.has(channel);
  }

  async setAndPeek(writes: readonly PeekedWrite[]): Promise<Peeked[]> {
    this.assertOpen();
    const expiries = writes.map(({ ttlMs }) => this.now() + checkTtl(ttlMs));
    return writes.map(({ key, value, peek }, index) => {
      this.entries.set(key, { value, expiresAt: expiries[index] as number });
      if (!this.channels.has(peek.channel)) return { listened: false, value: null };
      return { listened: true, value: this.liveString(peek.key)?.value ?? null };
    });
  }

  /** In process every message reaches its subscribers: they are never cut off, so never resubscribed. */
  onResubscribed(_listener: () => void): void {}

  async subscribe(channel: string, handler: (message: Uint8Array) => void): Promise<() => Promise<void>> {
    this.assertOpen();
    const subscription: Subscription = { handler };
    let subscriptions = this.channels.get(channel);
    if (!subscriptions) {
      subscriptions = new Set();
      this.channels.set(channel, subscriptions);
    }
    subscriptions.add(subscription);
    return async () => {
      const current = this.channels.get(channel);
      if (!current?.delete(subscription)) return;
      if (current.size === 0) this.channels.delete(channel);
    };
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    this.entries.clear();
    this.channels.clear();
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== null && entry.expiresAt <= now) this.entries.delete(key);
    }
    for (const [channel, history] of this.histories) {
      if (history.usedAt + HISTORY_META_TTL_MS <= now) this.histories.delete(channel);
      else if (history.entriesExpireAt <= now) history.entries = [];
    }
  }
}

/** Redis takes whole positive milliseconds for PX/PEXPIRE; both implementations accept the same range. */
export function checkTtl(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0)
    throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`);
  return Math.ceil(ttlMs);
}

/** Redis INCRBY takes a 64-bit integer; JavaScript numbers are exact only up to 2^53. */
export function checkIncrement(by: number): number {
  if (!Number.isSafeInteger(by)) throw new RangeError(`by must be a safe integer, got ${by}`);
  return by;
}
