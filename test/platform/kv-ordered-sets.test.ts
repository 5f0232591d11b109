import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type Kv, MemoryKv, RedisKv } from '../../src/platform/kv/index.js';
import { ORDERED_SET_BATCH } from '../../src/platform/kv/kv.js';
import { CONTRACT_COMMAND_TIMEOUT_MS, describeOnRedisTopologies } from '../helpers/redis-topologies.js';
import { eventually } from '../helpers/service-process.js';
import { Rng } from '../sim/rng.js';

const REDIS_URL = process.env.REDIS_URL;

/** An ASCII string of 1-12 characters: mostly printable (the BYLEX markers ( [ - + among them), now and then any ASCII. */
function randomMember(rng: Rng): string {
  const length = 1 + (rng.next() % 12);
  let text = '';
  for (let i = 0; i < length; i++) {
    const code = rng.next() % 16 === 0 ? rng.next() % 128 : 32 + (rng.next() % 95);
    text += String.fromCharCode(code);
  }
  return text;
}

/** ZRANGE by position as Redis documents it: negative positions from the end, then clamped. */
function rangeOf(sorted: readonly string[], start: number, stop: number): string[] {
  const from = Math.max(0, start < 0 ? sorted.length + start : start);
  const to = Math.min(sorted.length - 1, stop < 0 ? sorted.length + stop : stop);
  return from > to ? [] : sorted.slice(from, to + 1);
}

/** Splits `items` into batches of ORDERED_SET_BATCH, as a bulk load sends them. */
function batches<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += ORDERED_SET_BATCH)
    out.push(items.slice(start, start + ORDERED_SET_BATCH));
  return out;
}

/** Shuffles a copy of `items` with `rng` (Fisher-Yates). */
function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = rng.next() % (i + 1);
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/**
 * The ordered-set operations every `Kv` must share, against references computed here (sorted
 * arrays). A Redis store runs under a random per-run namespace (which ioredis must add to keys,
 * scripts' included, and not to bounds), and every key is deleted after; the keys a versioned
 * replacement takes share a hash tag.
 */
function describeOrderedSetContract(name: string, factory: (namespace: string) => Promise<Kv>): void {
  describe(name, () => {
    const namespace = `test:kv-ordered-sets:${randomUUID()}:`;
    const usedKeys = new Set<string>();
    let kv: Kv;
    const key = (name: string): string => {
      usedKeys.add(name);
      return name;
    };
    /** A set key and its versions key, in one hash slot. */
    const versioned = (tag: string) => ({ set: key(`{${tag}}:set`), versions: key(`{${tag}}:versions`) });

    beforeAll(async () => {
      kv = await factory(namespace);
    });
    afterAll(async () => {
      if (usedKeys.size > 0) await kv.del(...usedKeys);
      await kv.close();
    });

    describe('with thousands of random members', () => {
      const rng = new Rng(7_340_033, 2);
      let sorted: string[];
      const k = () => key('random');
      /** Members and strings that are not, to look up and start pages after. */
      const probes = () => [
        '',
        ...Array.from({ length: 150 }, () => sorted[rng.next() % sorted.length] as string),
        ...Array.from({ length: 150 }, () => randomMember(rng)),
      ];

      beforeAll(async () => {
        const drawn = Array.from({ length: 4000 }, () => randomMember(rng));
        const unique = new Set(drawn);
        // Concurrent batches, each one command: the counts of new members add up to the distinct
        // members, in whatever order the batches ran: on a Cluster, ioredis was seen sending one to
        // a node that does not serve the key's slot, and resending it, redirected, after the others.
        const added = await Promise.all(batches(drawn).map((batch) => kv.zadd(k(), ...batch)));
        expect(added.reduce((sum, count) => sum + count, 0)).toBe(unique.size);
        const removed = [...unique].filter(() => rng.next() % 3 === 0);
        expect(await kv.zrem(k(), ...removed, '~not a member~')).toBe(removed.length);
        for (const member of removed) unique.delete(member);
        sorted = [...unique].sort();
      });

      it('zcard counts the members and zrange 0 -1 answers them all in byte order', async () => {
        expect(await kv.zcard(k())).toBe(sorted.length);
        expect(await kv.zrange(k(), 0, -1)).toEqual(sorted);
      });

      it('zadd answers 0 for members it already holds', async () => {
        expect(await kv.zadd(k(), ...sorted.slice(0, 50))).toBe(0);
        expect(await kv.zcard(k())).toBe(sorted.length);
      });

      it('zrank answers the position of a member and null for a string that is not one', async () => {
        const asked = probes();
        const ranks = await Promise.all(asked.map((member) => kv.zrank(k(), member)));
        expect(ranks).toEqual(
          asked.map((member) => (sorted.includes(member) ? sorted.indexOf(member) : null)),
        );
      });

      it('zrange answers positions as Redis does, negative ones from the end and both clamped', async () => {
        const n = sorted.length;
        const windows: [number, number][] = [
          [0, 0],
          [n - 1, n - 1],
          [n, n + 5],
          [-5, -1],
          [-n - 10, 2],
          [3, 1],
          [-1, -5],
          [10, -n - 1],
          ...Array.from({ length: 100 }, (): [number, number] => {
            const start = (rng.next() % (2 * n + 20)) - n - 10;
            return [start, start + (rng.next() % 40) - 5];
          }),
        ];
        const pages = await Promise.all(windows.map(([start, stop]) => kv.zrange(k(), start, stop)));
        expect(pages).toEqual(windows.map(([start, stop]) => rangeOf(sorted, start, stop)));
      });

      it('zrangeAfter answers the members strictly after a bound, member or not', async () => {
        const asked = probes().map((bound) => ({ bound, count: rng.next() % 25 }));
        const pages = await Promise.all(asked.map(({ bound, count }) => kv.zrangeAfter(k(), bound, count)));
        expect(pages).toEqual(
          asked.map(({ bound, count }) => sorted.filter((member) => member > bound).slice(0, count)),
        );
      });

      it('pages of zrangeAfter, each after the last member of the one before, walk the whole set', async () => {
        const walked: string[] = [];
        for (let page = await kv.zrangeAfter(k(), '', 500); page.length > 0; ) {
          walked.push(...page);
          page = await kv.zrangeAfter(k(), page[page.length - 1] as string, 500);
        }
        // '' sorts before every member, and is none here.
        expect(walked).toEqual(sorted);
      });

      it('zcountBefore counts the members strictly before a bound, member or not', async () => {
        const asked = probes();
        const counts = await Promise.all(asked.map((bound) => kv.zcountBefore(k(), bound)));
        expect(counts).toEqual(asked.map((bound) => sorted.filter((member) => member < bound).length));
      });
    });

    describe('windows around the members of thousands of fields', () => {
      const rng = new Rng(7_340_033, 3);
      const { set, versions } = versioned('windows');
      /** Each field's member, null for a deleted one. */
      const members = new Map<string, string | null>();
      let sorted: string[];

      beforeAll(async () => {
        const drawn = new Set<string>();
        while (drawn.size < 3000) drawn.add(randomMember(rng));
        const firsts = [...drawn].slice(0, 2000);
        const entries = firsts.map((member, i) => ({ field: `f${i}`, version: 1, member }));
        for (const batch of batches(entries)) await kv.zreplaceVersionedMany(set, versions, batch);
        for (const { field, member } of entries) members.set(field, member);
        // A later version moves a third of the fields to members of their own and deletes a third.
        const spare = [...drawn].slice(2000);
        const changes = entries
          .filter((_, i) => i % 3 !== 0)
          .map(({ field }, i) => ({
            field,
            version: 2,
            member: i % 2 === 0 ? (spare[i / 2] as string) : null,
          }));
        for (const batch of batches(changes)) await kv.zreplaceVersionedMany(set, versions, batch);
        for (const { field, member } of changes) members.set(field, member);
        sorted = [...members.values()].filter((member) => member !== null).sort();
      });

      it('zwindowOfField answers the members around a field’s member, shifted to stay inside the set, and the first ones for a field without one', async () => {
        const n = sorted.length;
        const fields = [...members.keys()];
        const asked = [
          ...Array.from({ length: 300 }, () => ({
            field:
              rng.next() % 5 === 0 ? `never-${rng.next()}` : (fields[rng.next() % fields.length] as string),
            before: rng.next() % 30,
            count: rng.next() % 60,
          })),
          { field: 'f1', before: 5, count: 0 },
          { field: 'f0', before: 10, count: n + 5 },
          { field: 'never', before: 3, count: 10 },
        ];
        const windows = await Promise.all(
          asked.map(({ field, before, count }) => kv.zwindowOfField(set, versions, field, before, count)),
        );
        expect(windows).toEqual(
          asked.map(({ field, before, count }) => {
            const member = members.get(field) ?? null;
            const position = member === null ? 0 : sorted.filter((other) => other < member).length;
            const start = Math.max(0, Math.min(position - before, n - count));
            return { start, size: n, members: sorted.slice(start, start + count) };
          }),
        );
        // Fields without a member (never written or deleted) are among those asked.
        expect(asked.filter(({ field }) => (members.get(field) ?? null) === null).length).toBeGreaterThan(50);
      });
    });

    it('a missing key is the empty ordered set', async () => {
      const k = key('missing');
      expect(await kv.zcard(k)).toBe(0);
      expect(await kv.zrank(k, 'a')).toBeNull();
      expect(await kv.zrange(k, 0, -1)).toEqual([]);
      expect(await kv.zrangeAfter(k, 'a', 10)).toEqual([]);
      expect(await kv.zcountBefore(k, 'a')).toBe(0);
      const { set, versions } = versioned('missing');
      expect(await kv.zwindowOfField(set, versions, 'f', 2, 5)).toEqual({
        start: 0,
        size: 0,
        members: [],
      });
      expect(await kv.zrem(k, 'a')).toBe(0);
      expect(await kv.zadd(k)).toBe(0);
      expect(await kv.ttl(k)).toBe(-2);
    });

    it('zrangeAfter with a count of 0 answers no members', async () => {
      await kv.zadd(key('count-0'), 'a', 'b');
      expect(await kv.zrangeAfter(key('count-0'), '', 0)).toEqual([]);
    });

    it('zrem deletes the set it empties, TTL included', async () => {
      const k = key('emptied');
      await kv.zadd(k, 'a', 'b');
      expect(await kv.expire(k, 60_000)).toBe(true);
      expect(await kv.zrem(k, 'a', 'b', 'c')).toBe(2);
      expect(await kv.ttl(k)).toBe(-2);
      await kv.zadd(k, 'd');
      expect(await kv.ttl(k)).toBe(-1);
    });

    it('zadd keeps the TTL of the set it adds to, and a set is gone once its TTL lapses', async () => {
      const k = key('expiring');
      await kv.zadd(k, 'a');
      await kv.expire(k, 60_000);
      await kv.zadd(k, 'b');
      expect(await kv.ttl(k)).toBeGreaterThan(0);
      await kv.expire(k, 50);
      await eventually(async () => ((await kv.zcard(k)) === 0 ? true : undefined), 'the set expired', 5_000);
      expect(await kv.zrange(k, 0, -1)).toEqual([]);
    });

    it('del deletes an ordered set and a hash of versions and counts them', async () => {
      const { set, versions } = versioned('del');
      await kv.zreplaceVersioned(set, versions, 'f', 1, 'a');
      expect(await kv.del(set, versions, key('never-written'))).toBe(2);
      expect(await kv.zcard(set)).toBe(0);
      // The versions went with their key: version 1 applies again.
      expect(await kv.zreplaceVersioned(set, versions, 'f', 1, 'b')).toBe(true);
      expect(await kv.zrange(set, 0, -1)).toEqual(['b']);
    });

    it('ordered set commands refuse other kinds of key, and other commands an ordered set, with WRONGTYPE', async () => {
      const ordered = key('kinds:ordered');
      const text = key('kinds:string');
      const plain = key('kinds:set');
      await kv.zadd(ordered, 'a');
      await kv.set(text, 'v');
      await kv.sadd(plain, 'a');
      for (const other of [text, plain]) {
        await expect(kv.zadd(other, 'a')).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zrem(other, 'a')).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zrank(other, 'a')).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zcard(other)).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zrange(other, 0, -1)).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zrangeAfter(other, 'a', 1)).rejects.toThrow(/WRONGTYPE/);
        await expect(kv.zcountBefore(other, 'a')).rejects.toThrow(/WRONGTYPE/);
      }
      await expect(kv.get(ordered)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.incr(ordered)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.sadd(ordered, 'a')).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.smembers(ordered)).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.mget([ordered, text])).toEqual([null, 'v']);
      await kv.set(ordered, 'now a string');
      expect(await kv.get(ordered)).toBe('now a string');
    });

    it('zreplaceVersioned refuses keys of other kinds with WRONGTYPE and writes nothing', async () => {
      const { set, versions } = versioned('kinds');
      await kv.set(set, 'v');
      await expect(kv.zreplaceVersioned(set, versions, 'f', 1, 'a')).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zwindowOfField(set, versions, 'f', 1, 2)).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.ttl(versions)).toBe(-2);
      await kv.del(set);
      await kv.zadd(versions, 'x');
      await expect(kv.zreplaceVersioned(set, versions, 'f', 1, 'a')).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zwindowOfField(set, versions, 'f', 1, 2)).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.zcard(set)).toBe(0);
      // The hash of versions is a kind of its own.
      await kv.del(versions);
      await kv.zreplaceVersioned(set, versions, 'f', 1, 'a');
      await expect(kv.get(versions)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zcard(versions)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.smembers(versions)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zreplaceVersioned(versions, set, 'f', 2, 'b')).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.zrange(set, 0, -1)).toEqual(['a']);
    });

    it('refuses members and bounds that are not ASCII, writing nothing', async () => {
      const k = key('ascii');
      const { set, versions } = versioned('ascii');
      await expect(kv.zadd(k, 'a', 'é')).rejects.toThrow(RangeError);
      expect(await kv.zcard(k)).toBe(0);
      await kv.zadd(k, 'a');
      await expect(kv.zrem(k, 'a', '\u{1f600}')).rejects.toThrow(RangeError);
      await expect(kv.zrank(k, 'ä')).rejects.toThrow(RangeError);
      await expect(kv.zrangeAfter(k, '\u0080', 1)).rejects.toThrow(RangeError);
      await expect(kv.zcountBefore(k, '\uffff')).rejects.toThrow(RangeError);
      await expect(kv.zreplaceVersioned(set, versions, 'f', 1, 'ß')).rejects.toThrow(RangeError);
      expect(await kv.zrange(k, 0, -1)).toEqual(['a']);
      expect(await kv.ttl(versions)).toBe(-2);
    });

    it('refuses positions, counts and versions that are not integers, and a negative count', async () => {
      const k = key('integers');
      const { set, versions } = versioned('integers');
      await expect(kv.zrange(k, 0.5, 1)).rejects.toThrow(RangeError);
      await expect(kv.zrange(k, 0, Number.NaN)).rejects.toThrow(RangeError);
      await expect(kv.zrangeAfter(k, 'a', -1)).rejects.toThrow(RangeError);
      await expect(kv.zrangeAfter(k, 'a', 1.5)).rejects.toThrow(RangeError);
      await expect(kv.zwindowOfField(set, versions, 'f', -1, 2)).rejects.toThrow(RangeError);
      await expect(kv.zwindowOfField(set, versions, 'f', 1, 2.5)).rejects.toThrow(RangeError);
      await expect(kv.zreplaceVersioned(set, versions, 'f', 1.5, 'a')).rejects.toThrow(RangeError);
      await expect(kv.zreplaceVersioned(set, versions, 'f', 2 ** 53, 'a')).rejects.toThrow(RangeError);
      expect(await kv.ttl(versions)).toBe(-2);
    });

    it('zreplaceVersioned and zwindowOfField refuse keys that are one, lack a hash tag or differ in it', async () => {
      const refused = [
        [key('{t}:same'), key('{t}:same')],
        [key('untagged:set'), key('untagged:versions')],
        [key('{a}:set'), key('{b}:versions')],
        [key('{}:set'), key('{}:versions')],
      ];
      for (const [set, versions] of refused) {
        await expect(kv.zreplaceVersioned(set as string, versions as string, 'f', 1, 'a')).rejects.toThrow(
          RangeError,
        );
        await expect(kv.zreplaceVersionedMany(set as string, versions as string, [])).rejects.toThrow(
          RangeError,
        );
        await expect(kv.zwindowOfField(set as string, versions as string, 'f', 1, 2)).rejects.toThrow(
          RangeError,
        );
      }
    });

    it('zreplaceVersioned applies a greater version, replacing the field’s member, and ignores an equal or older one', async () => {
      const { set, versions } = versioned('versions');
      // No version yet is less than any, a negative one included.
      expect(await kv.zreplaceVersioned(set, versions, 'u1', -5, '10:u1')).toBe(true);
      expect(await kv.zreplaceVersioned(set, versions, 'u2', 1, '20:u2')).toBe(true);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 3, '30:u1')).toBe(true);
      expect(await kv.zrange(set, 0, -1)).toEqual(['20:u2', '30:u1']);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 3, '99:u1')).toBe(false);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 2, '00:u1')).toBe(false);
      expect(await kv.zrange(set, 0, -1)).toEqual(['20:u2', '30:u1']);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', Number.MAX_SAFE_INTEGER, '05:u1')).toBe(true);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', Number.MAX_SAFE_INTEGER - 1, '06:u1')).toBe(
        false,
      );
      expect(await kv.zrange(set, 0, -1)).toEqual(['05:u1', '20:u2']);
    });

    it('zreplaceVersioned with no member deletes the field’s member and keeps its version', async () => {
      const { set, versions } = versioned('deletion');
      await kv.zreplaceVersioned(set, versions, 'u1', 1, 'a');
      await kv.zreplaceVersioned(set, versions, 'u2', 1, 'b');
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 2, null)).toBe(true);
      expect(await kv.zrange(set, 0, -1)).toEqual(['b']);
      // A late older write does not bring the deleted member back; a newer one adds again.
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 1, 'a')).toBe(false);
      expect(await kv.zrange(set, 0, -1)).toEqual(['b']);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 3, 'c')).toBe(true);
      expect(await kv.zrange(set, 0, -1)).toEqual(['b', 'c']);
    });

    it('zreplaceVersioned deletes the set it empties, and the hash of versions stays', async () => {
      const { set, versions } = versioned('emptied');
      await kv.zreplaceVersioned(set, versions, 'u1', 1, 'a');
      await kv.expire(set, 60_000);
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 2, null)).toBe(true);
      expect(await kv.ttl(set)).toBe(-2);
      expect(await kv.ttl(versions)).toBe(-1);
      // Null after null, and null for a field never written, store the version only.
      expect(await kv.zreplaceVersioned(set, versions, 'u1', 3, null)).toBe(true);
      expect(await kv.zreplaceVersioned(set, versions, 'u9', 1, null)).toBe(true);
      expect(await kv.ttl(set)).toBe(-2);
      expect(await kv.zreplaceVersioned(set, versions, 'u9', 1, 'x')).toBe(false);
    });

    it('zreplaceVersioned keeps members that are empty or hold spaces, and fields with spaces, apart', async () => {
      const { set, versions } = versioned('spaces');
      await kv.zreplaceVersioned(set, versions, 'a field', 1, '');
      await kv.zreplaceVersioned(set, versions, 'b', 1, ' 2 spaced  ');
      expect(await kv.zrange(set, 0, -1)).toEqual(['', ' 2 spaced  ']);
      await kv.zreplaceVersioned(set, versions, 'a field', 2, 'x y');
      await kv.zreplaceVersioned(set, versions, 'b', 2, null);
      expect(await kv.zrange(set, 0, -1)).toEqual(['x y']);
    });

    it('writes of many fields landing in any order, or concurrently, leave each field’s member of its greatest version', async () => {
      const rng = new Rng(1_000_003, 3);
      // Per field, versions 1-8; the greatest deletes the member for every third field.
      const writes = Array.from({ length: 60 }, (_, f) =>
        Array.from({ length: 8 }, (_, v) => ({
          field: `u${f}`,
          version: v + 1,
          member: v === 7 && f % 3 === 0 ? null : `${String(rng.next() % 1000).padStart(4, '0')}:${v}:u${f}`,
        })),
      ).flat();
      const expected = writes
        .filter(({ version, member }) => version === 8 && member !== null)
        .map(({ member }) => member as string)
        .sort();
      const inOrder = versioned('any-order');
      const concurrent = versioned('concurrent');
      let applied = 0;
      for (const { field, version, member } of shuffled(writes, rng))
        if (await kv.zreplaceVersioned(inOrder.set, inOrder.versions, field, version, member)) applied++;
      expect(await kv.zrange(inOrder.set, 0, -1)).toEqual(expected);
      // Each field's version 8 applied, whenever it came, and nothing older after it.
      expect(applied).toBeGreaterThanOrEqual(60);
      const answers = await Promise.all(
        shuffled(writes, rng).map(({ field, version, member }) =>
          kv.zreplaceVersioned(concurrent.set, concurrent.versions, field, version, member),
        ),
      );
      expect(answers.filter(Boolean).length).toBeGreaterThanOrEqual(60);
      expect(await kv.zrange(concurrent.set, 0, -1)).toEqual(expected);
    });

    it('zreplaceVersionedMany applies its entries in order and answers each, so a bulk load never undoes a newer write', async () => {
      const { set, versions } = versioned('many');
      // A live write lands first, newer than the load's snapshot of u2.
      await kv.zreplaceVersioned(set, versions, 'u2', 5, '50:u2');
      const loaded = await kv.zreplaceVersionedMany(set, versions, [
        { field: 'u1', version: 1, member: '10:u1' },
        { field: 'u2', version: 4, member: '40:u2' },
        { field: 'u3', version: 2, member: '20:u3' },
        { field: 'u3', version: 1, member: '15:u3' },
        { field: 'u1', version: 2, member: '12:u1' },
      ]);
      expect(loaded).toEqual([true, false, true, false, true]);
      expect(await kv.zrange(set, 0, -1)).toEqual(['12:u1', '20:u3', '50:u2']);
      expect(await kv.zreplaceVersionedMany(set, versions, [])).toEqual([]);
    });

    it('a bulk load of thousands of fields in batches answers like single writes', async () => {
      const rng = new Rng(65_537, 4);
      const { set, versions } = versioned('bulk');
      const entries = Array.from({ length: 2500 }, (_, i) => ({
        field: `u${i}`,
        version: 1 + (rng.next() % 3),
        member: `${randomMember(rng)}:u${i}`,
      }));
      const answers = await Promise.all(
        batches(entries).map((batch) => kv.zreplaceVersionedMany(set, versions, batch)),
      );
      expect(answers.flat()).toEqual(entries.map(() => true));
      expect(await kv.zrange(set, 0, -1)).toEqual(entries.map(({ member }) => member).sort());
      expect(await kv.zcountBefore(set, '~')).toBe(entries.filter(({ member }) => member < '~').length);
    });
  });
}

describeOrderedSetContract('MemoryKv ordered sets', async () => new MemoryKv());

describe.skipIf(!REDIS_URL)('RedisKv ordered sets (REDIS_URL)', () => {
  describeOrderedSetContract('RedisKv ordered sets', (namespace) =>
    RedisKv.connect(REDIS_URL ?? '', { namespace, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  );

  it('keeps an ordered set and its versions under the namespace', async () => {
    const namespace = `test:kv-ordered-sets:${randomUUID()}:`;
    const kv = await RedisKv.connect(REDIS_URL ?? '', { namespace });
    const raw = await RedisKv.connect(REDIS_URL ?? '');
    try {
      await kv.zreplaceVersioned('{t}:set', '{t}:versions', 'f', 1, 'a');
      expect(await raw.zrange(`${namespace}{t}:set`, 0, -1)).toEqual(['a']);
      expect(await raw.client.hget(`${namespace}{t}:versions`, 'f')).toBe('1 a');
      expect(await raw.zcard('{t}:set')).toBe(0);
    } finally {
      await kv.del('{t}:set', '{t}:versions');
      await Promise.all([kv.close(), raw.close()]);
    }
  });
});

describeOnRedisTopologies((servers) =>
  describeOrderedSetContract('RedisKv ordered sets', (namespace) =>
    connectRedis(servers().topology, { namespace, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  ),
);
