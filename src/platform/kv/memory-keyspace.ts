import {
  checkInteger,
  checkMembers,
  checkVersioned,
  checkWindow,
  type OrderedWindow,
  type VersionedMember,
  windowStart,
} from './kv.js';
import { OrderedSet } from './ordered-set.js';

/** A field of a hash of versions (Kv.zreplaceVersioned): its last applied version and member. */
interface Versioned {
  version: number;
  member: string | null;
}

/**
 * What a key holds: a string, a set, an ordered set or a hash of versions. A set or ordered set is
 * never empty: like Redis, an emptied one is deleted.
 */
type Value = string | Set<string> | OrderedSet | Map<string, Versioned>;

export interface Entry {
  value: Value;
  /** Absolute time in ms at which the key is gone, or null for no TTL. */
  expiresAt: number | null;
}

/** An entry known to hold one kind of value. */
type Holding<V extends Value> = Entry & { value: V };

/**
 * MemoryKv's keys, and the commands on the collections they hold (sets and ordered sets), as on
 * Redis: a key holds one kind of value and may expire, and a command on another kind fails with
 * WRONGTYPE. MemoryKv adds strings, counters, TTLs, messaging and the store's lifecycle.
 */
export abstract class MemoryKeyspace {
  protected readonly entries = new Map<string, Entry>();
  protected closed = false;

  protected constructor(protected readonly now: () => number) {}

  async sadd(key: string, ...members: string[]): Promise<number> {
    this.assertOpen();
    const entry = this.liveAs(key, isSet);
    if (!entry) {
      // No entry for an empty call: Redis never stores an empty set.
      if (members.length === 0) return 0;
      return this.create(key, new Set(members)).size;
    }
    const before = entry.value.size;
    for (const member of members) entry.value.add(member);
    return entry.value.size - before;
  }

  async srem(key: string, ...members: string[]): Promise<number> {
    this.assertOpen();
    const entry = this.liveAs(key, isSet);
    if (!entry) return 0;
    let removed = 0;
    for (const member of members) if (entry.value.delete(member)) removed++;
    if (entry.value.size === 0) this.entries.delete(key);
    return removed;
  }

  async smembers(key: string): Promise<string[]> {
    this.assertOpen();
    return [...(this.liveAs(key, isSet)?.value ?? [])];
  }

  // Empty calls answer before the key is looked at, as RedisBackedKv sends nothing for them.
  async zadd(key: string, ...members: string[]): Promise<number> {
    this.assertOpen();
    checkMembers(members);
    if (members.length === 0) return 0;
    const set = this.liveAs(key, isOrdered)?.value ?? this.create(key, new OrderedSet());
    let added = 0;
    for (const member of members) if (set.add(member)) added++;
    return added;
  }

  async zrem(key: string, ...members: string[]): Promise<number> {
    this.assertOpen();
    checkMembers(members);
    if (members.length === 0) return 0;
    const set = this.liveAs(key, isOrdered)?.value;
    if (!set) return 0;
    let removed = 0;
    for (const member of members) if (set.delete(member)) removed++;
    if (set.size === 0) this.entries.delete(key);
    return removed;
  }

  async zrank(key: string, member: string): Promise<number | null> {
    this.assertOpen();
    checkMembers([member]);
    return this.liveAs(key, isOrdered)?.value.rank(member) ?? null;
  }

  async zcard(key: string): Promise<number> {
    this.assertOpen();
    return this.liveAs(key, isOrdered)?.value.size ?? 0;
  }

  async zrange(key: string, start: number, stop: number): Promise<string[]> {
    this.assertOpen();
    checkInteger('start', start);
    checkInteger('stop', stop);
    const set = this.liveAs(key, isOrdered)?.value;
    if (!set) return [];
    // As Redis does: a negative position counts from the end, then slice clamps both to the set.
    const from = start < 0 ? set.size + start : start;
    const to = stop < 0 ? set.size + stop : stop;
    return set.slice(from, to + 1);
  }

  async zrangeAfter(key: string, bound: string, count: number): Promise<string[]> {
    this.assertOpen();
    checkMembers([bound]);
    checkInteger('count', count, 0);
    const set = this.liveAs(key, isOrdered)?.value;
    if (!set) return [];
    const from = set.countBelow(bound, true);
    return set.slice(from, from + count);
  }

  async zcountBefore(key: string, bound: string): Promise<number> {
    this.assertOpen();
    checkMembers([bound]);
    return this.liveAs(key, isOrdered)?.value.countBelow(bound) ?? 0;
  }

  async zwindowOfField(
    setKey: string,
    versionsKey: string,
    field: string,
    before: number,
    count: number,
  ): Promise<OrderedWindow> {
    this.assertOpen();
    checkWindow(setKey, versionsKey, before, count);
    // Both kinds are checked, as the script's HGET and ZCARD do.
    const member = this.liveAs(versionsKey, isVersions)?.value.get(field)?.member ?? null;
    const set = this.liveAs(setKey, isOrdered)?.value;
    if (!set) return { start: 0, size: 0, members: [] };
    const start = windowStart(member === null ? 0 : set.countBelow(member), before, count, set.size);
    return { start, size: set.size, members: set.slice(start, start + count) };
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

  async zreplaceVersionedMany(
    setKey: string,
    versionsKey: string,
    entries: readonly VersionedMember[],
  ): Promise<boolean[]> {
    this.assertOpen();
    checkVersioned(setKey, versionsKey, entries);
    if (entries.length === 0) return [];
    // Both kinds are checked before anything is written, as the script does.
    let set = this.liveAs(setKey, isOrdered)?.value;
    let versions = this.liveAs(versionsKey, isVersions)?.value;
    return entries.map(({ field, version, member }) => {
      const stored = versions?.get(field);
      if (stored && stored.version >= version) return false;
      if (set && stored && stored.member !== null) {
        set.delete(stored.member);
        // Deleted when emptied, as Redis does: a member added next makes a new key, without TTL.
        if (set.size === 0) {
          this.entries.delete(setKey);
          set = undefined;
        }
      }
      if (member !== null) {
        set ??= this.create(setKey, new OrderedSet());
        set.add(member);
      }
      versions ??= this.create(versionsKey, new Map<string, Versioned>());
      versions.set(field, { version, member });
      return true;
    });
  }

  /** The entry for `key` if it exists and has not expired; an expired entry is removed on the way. */
  protected live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The live entry if it holds a string; another kind fails the way Redis answers a string command on it. */
  protected liveString(key: string): Holding<string> | undefined {
    return this.liveAs(key, isString);
  }

  private liveAs<V extends Value>(key: string, holds: (value: Value) => value is V): Holding<V> | undefined {
    const entry = this.live(key);
    if (entry && !holds(entry.value)) throw wrongType();
    return entry as Holding<V> | undefined;
  }

  /** Stores a new collection under `key`, without TTL, and answers it. */
  private create<V extends Value>(key: string, value: V): V {
    this.entries.set(key, { value, expiresAt: null });
    return value;
  }

  // Closed behaves like a closed Redis connection: commands fail instead of silently working.
  protected assertOpen(): void {
    if (this.closed) throw new Error('MemoryKv is closed');
  }
}

const isString = (value: Value): value is string => typeof value === 'string';
const isSet = (value: Value): value is Set<string> => value instanceof Set;
const isOrdered = (value: Value): value is OrderedSet => value instanceof OrderedSet;
const isVersions = (value: Value): value is Map<string, Versioned> => value instanceof Map;

function wrongType(): Error {
  return new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
}
