import { randomFillSync } from 'node:crypto';
import type { StreamPosition } from '../../../protocol/stream-position.js';

/** Kv.set's options. */
export interface SetOptions {
  ttlMs?: number;
  onlyIfAbsent?: boolean;
}

/** Kv.zwindowOfField's answer. */
export interface OrderedWindow {
  start: number;
  size: number;
  members: string[];
}

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
  set(key: string, value: string, options?: SetOptions): Promise<boolean>;
  /**
   * Stores `value` with a TTL and returns the value it replaced (null when the key was missing or
   * expired): one round trip that both refreshes a key and tells whether it was new.
   */
  swap(key: string, value: string, ttlMs: number): Promise<string | null>;
  /** Stores several keys with the same TTL in one round trip. */
  msetWithTtl(entries: readonly (readonly [string, string])[], ttlMs: number): Promise<void>;
  /**
   * Deletes keys; returns how many existed. Redis frees large values (UNLINK) in the background:
   * a DEL of a million-member ordered set held it for 0.8 s, its UNLINK for under 1 ms.
   */
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

  /**
   * Ordered sets: Redis sorted sets whose members all have score 0, which Redis keeps in the byte
   * order of the members. A caller that encodes a whole sort key in each member (fixed-width
   * fields, so byte order is the order it wants) gets positions, pages by position and pages after
   * a member, each in O(log n) (+ the members answered) on both implementations. Members and
   * bounds are ASCII strings (any other character throws a RangeError): the in-process set
   * compares UTF-16 code units, the same order as Redis's bytes only for ASCII. A key holds one
   * kind of value, so a string or set command on an ordered set key, or an ordered set command on
   * another kind, fails with WRONGTYPE; a set left empty is deleted, and `del`, `expire` and `ttl`
   * work on these keys too. A missing key is the empty set.
   */
  /**
   * ZADD at score 0; returns how many were not members before. One call is one command, so a bulk
   * load sends batches (ORDERED_SET_BATCH members per call; many calls may be in flight at once).
   */
  zadd(key: string, ...members: string[]): Promise<number>;
  /** ZREM; returns how many were members. */
  zrem(key: string, ...members: string[]): Promise<number>;
  /** ZRANK: the 0-based position of `member`, or null when it is not a member. */
  zrank(key: string, member: string): Promise<number | null>;
  /** ZCARD: how many members. */
  zcard(key: string): Promise<number>;
  /**
   * ZRANGE by position: the members at positions `start` to `stop`, both inclusive; a negative
   * position counts from the end (-1 is the last member), and both are clamped to the set.
   * Positions are integers (anything else throws a RangeError).
   */
  zrange(key: string, start: number, stop: number): Promise<string[]>;
  /**
   * The first `count` members after `bound` (strictly greater; `bound` need not be a member), in
   * order: ZRANGE key (bound + BYLEX LIMIT 0 count, a page that continues after the last member
   * of the previous one however the set changed meanwhile. `count` is a non-negative integer.
   */
  zrangeAfter(key: string, bound: string, count: number): Promise<string[]>;
  /**
   * How many members sort before `bound` (strictly; it need not be a member): ZLEXCOUNT key -
   * (bound, the position a member equal to `bound` has or would have.
   */
  zcountBefore(key: string, bound: string): Promise<number>;
  /**
   * The `count` members of `setKey` around the member `versionsKey` holds for `field` (written by
   * zreplaceVersioned), in one atomic step (one round trip on Redis): `before` members that sort
   * before it when the set has them, the window shifted to stay inside the set (start =
   * max(0, min(zcountBefore(member) - before, size - count))). A field with no member (never
   * written, or deleted) answers the window from the start of the set. Answers
   * the window's first position, the set's size and its members. The keys are checked as
   * zreplaceVersioned's are; `before` and `count` are non-negative integers.
   */
  zwindowOfField(
    setKey: string,
    versionsKey: string,
    field: string,
    before: number,
    count: number,
  ): Promise<OrderedWindow>;
  /**
   * In one atomic step (one round trip on Redis), when `version` is greater than the version
   * `versionsKey` holds for `field` (none: any version is greater): removes from `setKey` the
   * member stored for `field` (if any), adds `member` (null: nothing, the field's member is
   * deleted), and stores `version` and `member` as the field's. Otherwise nothing changes.
   * Answers whether it applied. Writes of one field leave the member of the greatest version in
   * whatever order they reach the store, so a caller whose source of truth numbers each field's
   * changes can send them concurrently (on a Redis Cluster, ioredis was seen running concurrent
   * commands out of the order they were sent in). The field keeps its version after a deletion,
   * so a late older write stays ignored: `versionsKey` holds a field for every field ever
   * written, until it is deleted (with `setKey`, when the whole set goes), and repeats each
   * member (a million members of 80 bytes took 164 MB in the set and 127 MB in the hash on
   * Redis). `versionsKey` is a Redis hash, a kind of its own for WRONGTYPE. A member is one
   * field's only: replacing a field's member removes it whoever else added it. Both keys must
   * share a `{hash tag}` (a Redis Cluster runs a script on one hash slot; every implementation
   * checks it, and that the keys differ), and `version` must be a safe integer; the checks throw
   * a RangeError.
   */
  zreplaceVersioned(
    setKey: string,
    versionsKey: string,
    field: string,
    version: number,
    member: string | null,
  ): Promise<boolean>;
  /**
   * zreplaceVersioned for many fields in one atomic step, in the order given (a field given twice
   * applies like two calls); answers, in that order, whether each applied. For a bulk load that
   * may race live writes: an entry older than what a write already stored is ignored. Batches of
   * ORDERED_SET_BATCH keep each call short enough not to stall Redis for other clients.
   */
  zreplaceVersionedMany(
    setKey: string,
    versionsKey: string,
    entries: readonly VersionedMember[],
  ): Promise<boolean[]>;

  /** Delivers `message` to every subscriber of `channel` on every node. */
  publish(channel: string, message: Uint8Array): Promise<void>;
  /** Whether any node has an active subscription to `channel` (Redis: PUBSUB NUMSUB). */
  hasSubscribers(channel: string): Promise<boolean>;
  /**
   * For each write in order: stores `value` under `key` with a TTL, then tells whether
   * `peek.channel` has a subscriber on any node and, only when it has, reads `peek.key`. Each write
   * is one atomic step, and on one Redis server all of them share one script call (a node batches
   * its callers' writes); for writes announced to their listeners. A subscriber counted here
   * subscribed before the write, so what it reads afterwards is the new value.
   */
  setAndPeek(writes: readonly PeekedWrite[]): Promise<Peeked[]>;
  /**
   * Calls `handler` for each message on `channel` until the returned function is called.
   * The subscription is active when the returned promise resolves.
   */
  subscribe(channel: string, handler: (message: Uint8Array) => void): Promise<() => Promise<void>>;
  /**
   * Calls `listener` each time the subscriptions are active again after the connection carrying
   * them was lost (Redis restarted or failed over): messages published meanwhile never reached
   * this node, those published from now on do. Never called in process, where nothing is lost.
   */
  onResubscribed(listener: () => void): void;

  /**
   * Publishes like `publish` to each channel and records the message in each channel's history,
   * in one atomic step (one round trip on Redis), so the offsets of a channel's messages are the
   * order its subscribers receive them in. Subscribers receive it framed with its position
   * (`framePositioned`). Answers the positions in the order of `channels`.
   */
  publishRecorded(
    channels: readonly string[],
    message: Uint8Array,
    history: HistoryLimits,
  ): Promise<StreamPosition[]>;
  /**
   * The channel's current position and the recorded messages after `afterOffset`, oldest first
   * (at most `limits.maxLen`). A history never written, or lost, reads as offset 0 of a new epoch.
   */
  readHistory(channel: string, afterOffset: number, limits: HistoryLimits): Promise<HistoryRead>;
  /**
   * Forgets the histories of `channels`: the next publish or read of each starts a new epoch, so a
   * reader is told that not every event is kept. For channels with an event that could not be
   * recorded (EventBus).
   */
  dropHistories(channels: readonly string[]): Promise<void>;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** One field's write for `zreplaceVersionedMany`: as the arguments of `zreplaceVersioned`. */
export interface VersionedMember {
  field: string;
  version: number;
  member: string | null;
}

/**
 * Members per `zadd` or entries per `zreplaceVersionedMany` call for a bulk load, so that no call
 * stalls Redis for its other clients: loading a million members of 80 bytes, Redis spent ~0.7 ms
 * per ZADD of 100 and ~1.7 ms per versioned call of 100 (10,000 calls, ~12 s and ~25 s with four
 * in flight, on a 2-core machine).
 */
export const ORDERED_SET_BATCH = 100;

const NON_ASCII = /[\u0080-\uffff]/;

/** Kv.zwindowOfField's first position: `before` members ahead of `position`, kept inside a set of `size`. */
export const windowStart = (position: number, before: number, count: number, size: number): number =>
  Math.max(0, Math.min(position - before, size - count));

/** Kv.zwindowOfField's arguments: a set and versions key pair and non-negative integer counts. */
export function checkWindow(setKey: string, versionsKey: string, before: number, count: number): void {
  checkVersionedKeys(setKey, versionsKey);
  checkInteger('before', before, 0);
  checkInteger('count', count, 0);
}

/** What `Kv` lets into an ordered set, so both implementations order it the same (see `zadd`). */
export function checkMembers(members: readonly string[]): void {
  for (const member of members) {
    if (NON_ASCII.test(member))
      throw new RangeError(`ordered set members are ASCII, got ${JSON.stringify(member)}`);
  }
}

/** A ZRANGE position, or a count of members, which Redis takes only as integers. */
export function checkInteger(name: string, value: number, min?: number): void {
  if (!Number.isSafeInteger(value) || (min !== undefined && value < min))
    throw new RangeError(`${name} must be an integer${min === undefined ? '' : ` >= ${min}`}, got ${value}`);
}

/** The arguments of `zreplaceVersionedMany`, checked as its documentation says. */
export function checkVersioned(
  setKey: string,
  versionsKey: string,
  entries: readonly VersionedMember[],
): void {
  checkVersionedKeys(setKey, versionsKey);
  for (const { version, member } of entries) {
    checkInteger('version', version);
    if (member !== null) checkMembers([member]);
  }
}

/** An ordered set and its hash of versions: two keys sharing a {hash tag}, so one script may take both. */
function checkVersionedKeys(setKey: string, versionsKey: string): void {
  const tag = hashTag(setKey);
  if (setKey === versionsKey || tag === undefined || tag !== hashTag(versionsKey))
    throw new RangeError(
      `the set and versions keys differ and share a {hash tag}, got ${setKey}, ${versionsKey}`,
    );
}

/** What a Redis Cluster hashes a key by when it has one: the first `{...}` with something inside. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** One write of `setAndPeek`. */
export interface PeekedWrite {
  key: string;
  value: string;
  ttlMs: number;
  peek: { channel: string; key: string };
}

/** What `setAndPeek` found: `value` is null when nobody listened (the key was not read). */
export interface Peeked {
  listened: boolean;
  value: string | null;
}

/** A place in a recorded channel's history: the `pos` of event frames (protocol/stream-position.ts). */
export type { StreamPosition };

export interface HistoryLimits {
  /** Messages kept per channel. */
  maxLen: number;
  /** The history is dropped this long after its last message; also how old a kept message may be. */
  ttlMs: number;
}

export interface HistoryRead {
  position: StreamPosition;
  /** Contiguous from the oldest kept message after the asked offset; `at` is its publish time in ms. */
  entries: { offset: number; at: number; message: Uint8Array }[];
}

/**
 * How long a history's epoch and offset are kept after its last use: longer than its messages, so
 * a reader who missed nothing while the messages expired is still told so.
 */
export const HISTORY_META_TTL_MS = 24 * 3600 * 1000;

const EPOCH_BYTES = 6;
/** Random bytes for many epochs: every recorded publish offers one, and a call into crypto each was ~2% of a DM send. */
const epochPool = Buffer.alloc(EPOCH_BYTES * 256);
let epochPoolUsed = epochPool.length;

/** A short random name for a new history. */
export function newEpoch(): string {
  if (epochPoolUsed === epochPool.length) {
    randomFillSync(epochPool);
    epochPoolUsed = 0;
  }
  epochPoolUsed += EPOCH_BYTES;
  return epochPool.toString('base64url', epochPoolUsed - EPOCH_BYTES, epochPoolUsed);
}

const COLON = 0x3a;
const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/**
 * How a recorded message travels on pub/sub: `<offset>:<epoch>:` in ASCII, then the message. A
 * msgpack map never starts with an ASCII digit, so receivers tell both kinds apart by the first
 * byte. Redis builds it inside the publishing script, where the offset is known.
 */
export function framePositioned(position: StreamPosition, message: Uint8Array): Uint8Array {
  const prefix = textEncoder.encode(`${position.offset}:${position.epoch}:`);
  const framed = new Uint8Array(prefix.byteLength + message.byteLength);
  framed.set(prefix);
  framed.set(message, prefix.byteLength);
  return framed;
}

/** Splits a pub/sub message into its position and payload; a message published unrecorded has no position. */
export function unframePositioned(bytes: Uint8Array): { position?: StreamPosition; message: Uint8Array } {
  const first = bytes[0] ?? 0;
  if (first < 0x30 || first > 0x39) return { message: bytes };
  const afterOffset = bytes.indexOf(COLON);
  const afterEpoch = bytes.indexOf(COLON, afterOffset + 1);
  if (afterOffset < 0 || afterEpoch < 0) return { message: bytes };
  return {
    position: {
      offset: Number(textDecoder.decode(bytes.subarray(0, afterOffset))),
      epoch: textDecoder.decode(bytes.subarray(afterOffset + 1, afterEpoch)),
    },
    message: bytes.subarray(afterEpoch + 1),
  };
}
