/**
 * The one key-value / counter / pub-sub interface of the service. With REDIS_URL it is Redis
 * (shared by every process of the service); without, an in-process implementation with the same
 * semantics. Presence TTL keys, counters and cross-node events all go through it.
 */
export interface Kv {
  readonly kind: 'redis' | 'memory';

  get(key: string): Promise<string | null>;
  /** Values in the order of `keys`; missing or expired keys read as null. */
  mget(keys: readonly string[]): Promise<(string | null)[]>;
  /**
   * Stores `value`. `ttlMs` makes the key expire; `onlyIfAbsent` stores only when the key does not
   * exist. Returns whether the value was stored.
   */
  set(key: string, value: string, options?: { ttlMs?: number; onlyIfAbsent?: boolean }): Promise<boolean>;
  /**
   * Stores `value` with a TTL and returns the value it replaced (null when the key was missing or
   * expired): one round trip that both refreshes a key and tells whether it was new.
   */
  swap(key: string, value: string, ttlMs: number): Promise<string | null>;
  /** Stores several keys with the same TTL in one round trip. */
  msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void>;
  /** Deletes keys; returns how many existed. */
  del(...keys: string[]): Promise<number>;
  /** Adds `by` (default 1) and returns the new value; a new key gets `ttlMs` when given. */
  incr(key: string, options?: { by?: number; ttlMs?: number }): Promise<number>;
  /** Sets a new TTL on an existing key; returns false if the key does not exist. */
  expire(key: string, ttlMs: number): Promise<boolean>;
  /**
   * Sets a new TTL on each existing key, in few round trips however many keys; returns, in the
   * order of `keys`, whether each existed (missing keys are not created).
   */
  expireMany(keys: readonly string[], ttlMs: number): Promise<boolean[]>;
  /** Milliseconds left: -1 for a key without TTL, -2 for a missing key. */
  ttl(key: string): Promise<number>;

  /**
   * Set operations (Redis SADD / SREM / SMEMBERS). A key holds either a string or a set: a string
   * command on a set key, or a set command on a string key, fails with WRONGTYPE. A set left
   * empty by `srem` is deleted, and `del`, `expire` and `ttl` work on set keys too.
   */
  /** Adds the members; returns how many were not members before. */
  sadd(key: string, ...members: string[]): Promise<number>;
  /** Removes the members; returns how many were members. */
  srem(key: string, ...members: string[]): Promise<number>;
  /** Every member, in no particular order; a missing key is the empty set. */
  smembers(key: string): Promise<string[]>;

  /** Delivers `message` to every subscriber of `channel` on every node. */
  publish(channel: string, message: Uint8Array): Promise<void>;
  /** Whether any node has an active subscription to `channel` (Redis: PUBSUB NUMSUB). */
  hasSubscribers(channel: string): Promise<boolean>;
  /**
   * Calls `handler` for each message on `channel` until the returned function is called.
   * The subscription is active when the returned promise resolves.
   */
  subscribe(channel: string, handler: (message: Uint8Array) => void): Promise<() => Promise<void>>;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
