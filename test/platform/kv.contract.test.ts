import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterKv,
  connectRedis,
  createKv,
  type Kv,
  MemoryKv,
  RedisKv,
} from '../../src/platform/kv/index.js';
import type { Peeked } from '../../src/platform/kv/kv.js';
import { CONTRACT_COMMAND_TIMEOUT_MS, describeOnRedisTopologies } from '../helpers/redis-topologies.js';

type OnError = (error: unknown, context: string) => void;
type KvFactory = (onError: OnError) => Promise<Kv>;

const REDIS_URL = process.env.REDIS_URL;

/** Polls until `condition` holds; pub/sub delivery is asynchronous on both implementations. */
async function waitUntil(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** One write of `setAndPeek`, and what it found. */
async function peekOne(
  kv: Kv,
  key: string,
  value: string,
  ttlMs: number,
  peek: { channel: string; key: string },
): Promise<Peeked | undefined> {
  const found = await kv.setAndPeek([{ key, value, ttlMs, peek }]);
  expect(found).toHaveLength(1);
  return found[0];
}

/**
 * The behaviour every `Kv` must share. Keys and channels carry a random per-run prefix so parallel
 * runs against one Redis never collide, and every key handed out is deleted afterwards.
 */
function describeKvContract(name: string, kind: Kv['kind'], factory: KvFactory): void {
  describe(name, () => {
    const prefix = `test:kv:${randomUUID()}:`;
    const usedKeys = new Set<string>();
    const errors: { error: unknown; context: string }[] = [];
    let kv: Kv;

    const key = (suffix: string): string => {
      usedKeys.add(prefix + suffix);
      return prefix + suffix;
    };
    const channel = (suffix: string): string => `${prefix}channel:${suffix}`;
    const collector = () => {
      const received: Uint8Array[] = [];
      return { received, handler: (message: Uint8Array) => received.push(message) };
    };

    beforeAll(async () => {
      kv = await factory((error, context) => errors.push({ error, context }));
    });

    afterAll(async () => {
      if (usedKeys.size > 0) await kv.del(...usedKeys);
      await kv.close();
    });

    it(`reports its kind as ${kind}`, () => {
      expect(kv.kind).toBe(kind);
    });

    it('a value set under a key reads back unchanged', async () => {
      expect(await kv.set(key('round-trip'), 'héllo wörld')).toBe(true);
      expect(await kv.get(key('round-trip'))).toBe('héllo wörld');
    });

    it('swap stores a value with a TTL and returns the value it replaced, null for a new or expired key', async () => {
      expect(await kv.swap(key('swap'), 'first', 10_000)).toBeNull();
      expect(await kv.swap(key('swap'), 'second', 10_000)).toBe('first');
      expect(await kv.get(key('swap'))).toBe('second');
      const left = await kv.ttl(key('swap'));
      expect(left).toBeGreaterThan(9000);
      expect(left).toBeLessThanOrEqual(10_000);
      await kv.swap(key('swap-expiring'), 'soon gone', 100);
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(await kv.swap(key('swap-expiring'), 'again', 10_000)).toBeNull();
    });

    it('a key that was never set reads as null', async () => {
      expect(await kv.get(key('never-set'))).toBeNull();
    });

    it('a key set with a TTL reads as null after the TTL lapses and ttl() reports it missing', async () => {
      await kv.set(key('short-lived'), 'v', { ttlMs: 100 });
      expect(await kv.get(key('short-lived'))).toBe('v');
      await sleep(250);
      expect(await kv.get(key('short-lived'))).toBeNull();
      expect(await kv.ttl(key('short-lived'))).toBe(-2);
    });

    it('ttl() is -1 without a TTL, -2 for a missing key and the remaining time with a TTL', async () => {
      await kv.set(key('ttl-none'), 'v');
      await kv.set(key('ttl-some'), 'v', { ttlMs: 10_000 });
      expect(await kv.ttl(key('ttl-none'))).toBe(-1);
      expect(await kv.ttl(key('ttl-missing'))).toBe(-2);
      const left = await kv.ttl(key('ttl-some'));
      expect(left).toBeGreaterThan(9_000);
      expect(left).toBeLessThanOrEqual(10_000);
    });

    it('a plain set replaces the value and drops the previous TTL', async () => {
      await kv.set(key('reset'), 'first', { ttlMs: 10_000 });
      expect(await kv.set(key('reset'), 'second')).toBe(true);
      expect(await kv.get(key('reset'))).toBe('second');
      expect(await kv.ttl(key('reset'))).toBe(-1);
    });

    it('set with onlyIfAbsent stores a new key but refuses to overwrite and returns false', async () => {
      expect(await kv.set(key('nx'), 'first', { onlyIfAbsent: true })).toBe(true);
      expect(await kv.set(key('nx'), 'second', { onlyIfAbsent: true, ttlMs: 5_000 })).toBe(false);
      expect(await kv.get(key('nx'))).toBe('first');
      expect(await kv.ttl(key('nx'))).toBe(-1);
    });

    it('set with onlyIfAbsent stores over a key whose TTL has lapsed', async () => {
      await kv.set(key('nx-expired'), 'old', { ttlMs: 50 });
      await sleep(120);
      expect(await kv.set(key('nx-expired'), 'new', { onlyIfAbsent: true })).toBe(true);
      expect(await kv.get(key('nx-expired'))).toBe('new');
    });

    it('mget returns values in key order with null for missing and expired keys', async () => {
      await kv.set(key('mget-a'), 'a');
      await kv.set(key('mget-b'), 'b');
      await kv.set(key('mget-expired'), 'x', { ttlMs: 50 });
      await sleep(120);
      const keys = [key('mget-b'), key('mget-missing'), key('mget-a'), key('mget-expired')];
      expect(await kv.mget(keys)).toEqual(['b', null, 'a', null]);
      expect(await kv.mget([])).toEqual([]);
    });

    it('msetWithTtl stores every entry with the TTL and they all expire', async () => {
      const entries = [
        [key('mset-1'), 'one'],
        [key('mset-2'), 'two'],
        [key('mset-3'), 'three'],
      ] as const;
      await kv.msetWithTtl(entries, 150);
      expect(await kv.mget(entries.map(([k]) => k))).toEqual(['one', 'two', 'three']);
      const left = await kv.ttl(key('mset-2'));
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(150);
      await sleep(300);
      expect(await kv.mget(entries.map(([k]) => k))).toEqual([null, null, null]);
    });

    it('del removes the keys and returns how many of them existed', async () => {
      await kv.set(key('del-1'), 'v');
      await kv.set(key('del-2'), 'v');
      expect(await kv.del(key('del-1'), key('del-missing'), key('del-2'))).toBe(2);
      expect(await kv.mget([key('del-1'), key('del-2')])).toEqual([null, null]);
      expect(await kv.del(key('del-1'))).toBe(0);
    });

    it('incr starts a new key at by, accumulates, and counts by one by default', async () => {
      expect(await kv.incr(key('counter'), { by: 5 })).toBe(5);
      expect(await kv.incr(key('counter'), { by: 3 })).toBe(8);
      expect(await kv.incr(key('counter'))).toBe(9);
      expect(await kv.incr(key('counter'), { by: -10 })).toBe(-1);
      expect(await kv.get(key('counter'))).toBe('-1');
      expect(await kv.incr(key('counter-default'))).toBe(1);
    });

    it('incr applies the TTL only when it creates the key and a later TTL does not extend it', async () => {
      expect(await kv.incr(key('window'), { ttlMs: 150 })).toBe(1);
      expect(await kv.incr(key('window'), { ttlMs: 60_000 })).toBe(2);
      const left = await kv.ttl(key('window'));
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(150);
      await sleep(300);
      expect(await kv.get(key('window'))).toBeNull();
      expect(await kv.incr(key('window'), { by: 4, ttlMs: 150 })).toBe(4);
    });

    it('incr does not give a TTL to an existing key that held zero', async () => {
      await kv.set(key('zero'), '0');
      expect(await kv.incr(key('zero'), { by: 3, ttlMs: 5_000 })).toBe(3);
      expect(await kv.ttl(key('zero'))).toBe(-1);
    });

    it('incr rejects a key that does not hold an integer', async () => {
      await kv.set(key('not-a-number'), 'abc');
      await expect(kv.incr(key('not-a-number'))).rejects.toThrow(/not an integer/);
      expect(await kv.get(key('not-a-number'))).toBe('abc');
    });

    it('expire sets a new TTL on an existing key and returns false for a missing key', async () => {
      await kv.set(key('expire'), 'v');
      expect(await kv.expire(key('expire'), 5_000)).toBe(true);
      const left = await kv.ttl(key('expire'));
      expect(left).toBeGreaterThan(4_000);
      expect(left).toBeLessThanOrEqual(5_000);
      expect(await kv.expire(key('expire-missing'), 5_000)).toBe(false);
      expect(await kv.ttl(key('expire-missing'))).toBe(-2);
    });

    it('expireMany sets the TTL of each existing key, reports which existed and creates none', async () => {
      // More keys than one Redis script call takes, so the batches must come back in order.
      const keys = Array.from({ length: 2_500 }, (_, i) => key(`many-${i}`));
      const existing = keys.filter((_, i) => i % 3 !== 1);
      await kv.msetWithTtl(
        existing.map((k) => [k, 'v'] as const),
        60_000,
      );
      const existed = await kv.expireMany(keys, 5_000);
      expect(existed).toEqual(keys.map((_, i) => i % 3 !== 1));
      const [kept, missing] = [keys[0] as string, keys[1] as string];
      // Down from 60 s to at most 5 s, and still a TTL (not -1). How much of the 5 s is left depends
      // on how long the 2,500 keys took: on a Cluster they are one script per hash slot.
      expect(await kv.ttl(kept)).toBeLessThanOrEqual(5_000);
      expect(await kv.ttl(kept)).toBeGreaterThan(0);
      expect(await kv.ttl(missing)).toBe(-2);
      expect(await kv.expireMany([], 5_000)).toEqual([]);
      await expect(kv.expireMany([kept], 0)).rejects.toThrow(RangeError);
    });

    it('a TTL that is not a positive number is rejected', async () => {
      await expect(kv.set(key('bad-ttl'), 'v', { ttlMs: 0 })).rejects.toThrow(RangeError);
      await expect(kv.expire(key('bad-ttl'), -5)).rejects.toThrow(RangeError);
      expect(await kv.get(key('bad-ttl'))).toBeNull();
    });

    it('publish delivers a binary payload byte-for-byte to every subscriber of the channel only', async () => {
      const first = collector();
      const second = collector();
      const other = collector();
      const unsubscribe = [
        await kv.subscribe(channel('binary'), first.handler),
        await kv.subscribe(channel('binary'), second.handler),
        await kv.subscribe(channel('binary-other'), other.handler),
      ];
      const payload = new Uint8Array([0x00, 0xff, 0x7f, 0x80, 0x0d, 0x0a, 0x00, 0x24, 0xfe]);
      await kv.publish(channel('binary'), payload);
      await waitUntil(() => first.received.length === 1 && second.received.length === 1);
      expect(Array.from(first.received[0] ?? [])).toEqual(Array.from(payload));
      expect(Array.from(second.received[0] ?? [])).toEqual(Array.from(payload));
      // Messages arrive in publish order, so once this marker is in the other channel got nothing else.
      await kv.publish(channel('binary-other'), new Uint8Array([1]));
      await waitUntil(() => other.received.length > 0);
      expect(other.received.map((message) => Array.from(message))).toEqual([[1]]);
      for (const stop of unsubscribe) await stop();
    });

    it('publish never runs a handler inside the publisher call', async () => {
      const { received, handler } = collector();
      const stop = await kv.subscribe(channel('async'), handler);
      const published = kv.publish(channel('async'), new Uint8Array([7]));
      expect(received).toHaveLength(0);
      await published;
      await waitUntil(() => received.length === 1);
      await stop();
    });

    it('a subscriber receives nothing after it unsubscribes', async () => {
      const gone = collector();
      const marker = collector();
      const stopGone = await kv.subscribe(channel('gone'), gone.handler);
      const stopMarker = await kv.subscribe(channel('gone-marker'), marker.handler);
      await kv.publish(channel('gone'), new Uint8Array([1]));
      await waitUntil(() => gone.received.length === 1);
      await stopGone();
      await kv.publish(channel('gone'), new Uint8Array([2]));
      await kv.publish(channel('gone-marker'), new Uint8Array([3]));
      await waitUntil(() => marker.received.length === 1);
      expect(gone.received.map((message) => Array.from(message))).toEqual([[1]]);
      await stopMarker();
    });

    it('subscriptions asked for together each receive their own channel, and a channel left and joined again in one turn stays subscribed', async () => {
      const names = Array.from({ length: 30 }, (_, i) => channel(`together-${i}`));
      const collectors = names.map(() => collector());
      const stops = await Promise.all(collectors.map((c, i) => kv.subscribe(names[i] as string, c.handler)));
      const again = collector();
      const first = kv.subscribe(channel('rejoined'), () => {});
      const rejoined = first.then(async (stop) => {
        const stopped = stop();
        const next = kv.subscribe(channel('rejoined'), again.handler);
        await stopped;
        return next;
      });
      await Promise.all(names.map((name, i) => kv.publish(name, new Uint8Array([i]))));
      await waitUntil(() => collectors.every((c) => c.received.length === 1));
      expect(collectors.map((c) => Array.from(c.received[0] as Uint8Array))).toEqual(
        names.map((_, i) => [i]),
      );
      const stopRejoined = await rejoined;
      await kv.publish(channel('rejoined'), new Uint8Array([9]));
      await waitUntil(() => again.received.length === 1);
      expect(await kv.hasSubscribers(channel('rejoined'))).toBe(true);
      await Promise.all([...stops.map((stop) => stop()), stopRejoined()]);
      expect(await kv.hasSubscribers(channel('rejoined'))).toBe(false);
      expect(await kv.hasSubscribers(names[0] as string)).toBe(false);
    });

    it('channels left together in one turn, more than one command holds, are all left, and one joined again at once stays joined', async () => {
      const names = Array.from({ length: 2_500 }, (_, i) => channel(`mass-${i}`));
      const stops = await Promise.all(names.map((name) => kv.subscribe(name, () => {})));
      const again = collector();
      const leaving = Promise.all(stops.map((stop) => stop()));
      const rejoined = kv.subscribe(names[1_234] as string, again.handler);
      await leaving;
      const stopRejoined = await rejoined;
      await kv.publish(names[1_234] as string, new Uint8Array([7]));
      await waitUntil(() => again.received.length === 1);
      const still = await Promise.all(names.map((name) => kv.hasSubscribers(name)));
      expect(names.filter((_, i) => still[i])).toEqual([names[1_234]]);
      await stopRejoined();
      expect(await kv.hasSubscribers(names[1_234] as string)).toBe(false);
    });

    it('hasSubscribers is true while a channel has a subscriber and false before and after', async () => {
      const listened = channel('listened');
      expect(await kv.hasSubscribers(listened)).toBe(false);
      const stopFirst = await kv.subscribe(listened, () => {});
      const stopSecond = await kv.subscribe(listened, () => {});
      expect(await kv.hasSubscribers(listened)).toBe(true);
      expect(await kv.hasSubscribers(channel('listened-other'))).toBe(false);
      await stopFirst();
      expect(await kv.hasSubscribers(listened)).toBe(true);
      await stopSecond();
      expect(await kv.hasSubscribers(listened)).toBe(false);
    });

    it('setAndPeek stores the value with its TTL and reads the other key only while the channel has a subscriber', async () => {
      const watched = channel('peeked');
      const written = key('peek-written');
      const peek = { channel: watched, key: key('peek-read') };
      await kv.set(peek.key, 'online');
      expect(await peekOne(kv, written, 'first', 10_000, peek)).toEqual({ listened: false, value: null });
      expect(await kv.get(written)).toBe('first');
      const left = await kv.ttl(written);
      expect(left).toBeGreaterThan(9_000);
      expect(left).toBeLessThanOrEqual(10_000);
      const stop = await kv.subscribe(watched, () => {});
      expect(await peekOne(kv, written, 'second', 10_000, peek)).toEqual({
        listened: true,
        value: 'online',
      });
      expect(await peekOne(kv, written, 'third', 10_000, { ...peek, key: key('peek-missing') })).toEqual({
        listened: true,
        value: null,
      });
      expect(await kv.get(written)).toBe('third');
      await stop();
      expect(await peekOne(kv, written, 'fourth', 10_000, peek)).toEqual({ listened: false, value: null });
    });

    it('setAndPeek of several writes applies them in order and answers each, a later write of a key winning', async () => {
      const watched = channel('peeked-many');
      const quiet = channel('peeked-many-quiet');
      const [first, second, read] = [key('peek-many-1'), key('peek-many-2'), key('peek-many-read')];
      await kv.set(read, 'online');
      const stop = await kv.subscribe(watched, () => {});
      try {
        expect(
          await kv.setAndPeek([
            { key: first, value: 'a', ttlMs: 10_000, peek: { channel: watched, key: read } },
            { key: second, value: 'b', ttlMs: 10_000, peek: { channel: quiet, key: read } },
            { key: first, value: 'c', ttlMs: 10_000, peek: { channel: watched, key: first } },
            {
              key: second,
              value: 'd',
              ttlMs: 10_000,
              peek: { channel: watched, key: key('peek-many-none') },
            },
          ]),
        ).toEqual([
          { listened: true, value: 'online' },
          { listened: false, value: null },
          { listened: true, value: 'c' },
          { listened: true, value: null },
        ]);
        expect(await kv.mget([first, second])).toEqual(['c', 'd']);
        expect(await kv.setAndPeek([])).toEqual([]);
      } finally {
        await stop();
      }
    });

    it('setAndPeek with a TTL that is not a positive number is rejected and writes nothing', async () => {
      const peek = { channel: channel('peek-bad-ttl'), key: key('peek-bad-ttl-read') };
      await expect(peekOne(kv, key('peek-bad-ttl'), 'v', 0, peek)).rejects.toThrow(RangeError);
      await expect(peekOne(kv, key('peek-bad-ttl'), 'v', Number.NaN, peek)).rejects.toThrow(RangeError);
      await expect(
        kv.setAndPeek([
          { key: key('peek-bad-ttl-first'), value: 'v', ttlMs: 10_000, peek },
          { key: key('peek-bad-ttl'), value: 'v', ttlMs: -1, peek },
        ]),
      ).rejects.toThrow(RangeError);
      expect(await kv.get(key('peek-bad-ttl-first'))).toBeNull();
      expect(await kv.get(key('peek-bad-ttl'))).toBeNull();
    });

    it('two handlers on one channel both receive and unsubscribing one leaves the other receiving', async () => {
      const first = collector();
      const second = collector();
      const stopFirst = await kv.subscribe(channel('shared'), first.handler);
      const stopSecond = await kv.subscribe(channel('shared'), second.handler);
      await kv.publish(channel('shared'), new Uint8Array([1]));
      await waitUntil(() => first.received.length === 1 && second.received.length === 1);
      await stopFirst();
      // Calling it twice must not take the other subscriber down with it.
      await stopFirst();
      await kv.publish(channel('shared'), new Uint8Array([2]));
      await waitUntil(() => second.received.length === 2);
      expect(first.received.map((message) => Array.from(message))).toEqual([[1]]);
      expect(second.received.map((message) => Array.from(message))).toEqual([[1], [2]]);
      await stopSecond();
    });

    it('the same function subscribed twice receives each message twice until one is removed', async () => {
      const { received, handler } = collector();
      const stopOne = await kv.subscribe(channel('twice'), handler);
      const stopTwo = await kv.subscribe(channel('twice'), handler);
      await kv.publish(channel('twice'), new Uint8Array([1]));
      await waitUntil(() => received.length === 2);
      await stopOne();
      await kv.publish(channel('twice'), new Uint8Array([2]));
      await waitUntil(() => received.length === 3);
      expect(received.map((message) => message[0])).toEqual([1, 1, 2]);
      await stopTwo();
    });

    it('a handler that throws is reported and does not stop delivery to the others', async () => {
      const before = collector();
      const after = collector();
      const failure = new Error('handler failed on purpose');
      const stops = [
        await kv.subscribe(channel('throwing'), before.handler),
        await kv.subscribe(channel('throwing'), () => {
          throw failure;
        }),
        await kv.subscribe(channel('throwing'), after.handler),
      ];
      await kv.publish(channel('throwing'), new Uint8Array([1]));
      await kv.publish(channel('throwing'), new Uint8Array([2]));
      await waitUntil(() => before.received.length === 2 && after.received.length === 2);
      expect(errors.filter((entry) => entry.error === failure)).toHaveLength(2);
      for (const stop of stops) await stop();
    });

    it('ping resolves while the store is open', async () => {
      await expect(kv.ping()).resolves.toBeUndefined();
    });

    it('close can be called twice and the closed store refuses commands', async () => {
      const own = await factory(() => {});
      await own.ping();
      await own.close();
      await expect(own.close()).resolves.toBeUndefined();
      await expect(own.ping()).rejects.toThrow();
    });
  });
}

describeKvContract('MemoryKv', 'memory', async (onError) => new MemoryKv({ onError }));

describe.skipIf(!REDIS_URL)('RedisKv (REDIS_URL)', () => {
  describeKvContract('RedisKv', 'redis', (onError) =>
    RedisKv.connect(REDIS_URL ?? '', { onError, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  );

  it('handlers on one channel share one Redis subscription that ends with the last handler', async () => {
    const kv = await RedisKv.connect(REDIS_URL ?? '');
    const channel = `test:kv:${randomUUID()}:numsub`;
    const subscribers = async () => ((await kv.client.pubsub('NUMSUB', channel)) as [string, number])[1];
    const stopFirst = await kv.subscribe(channel, () => {});
    const stopSecond = await kv.subscribe(channel, () => {});
    expect(await subscribers()).toBe(1);
    await stopFirst();
    expect(await subscribers()).toBe(1);
    await stopSecond();
    expect(await subscribers()).toBe(0);
    await kv.close();
  });
});

describeOnRedisTopologies((servers) => {
  describeKvContract('RedisKv', 'redis', (onError) =>
    connectRedis(servers().topology, { onError, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  );

  it('connects a ClusterKv to a Redis Cluster and a RedisKv to a Sentinel-watched primary', async () => {
    const kv = await connectRedis(servers().topology);
    try {
      expect(kv).toBeInstanceOf(servers().topology.kind === 'cluster' ? ClusterKv : RedisKv);
    } finally {
      await kv.close();
    }
  });
});

describe('MemoryKv with an injected clock', () => {
  it('a key expires exactly when the clock reaches its TTL', async () => {
    let now = 1_000;
    const kv = new MemoryKv({ now: () => now });
    await kv.set('k', 'v', { ttlMs: 500 });
    now = 1_499;
    expect(await kv.get('k')).toBe('v');
    expect(await kv.ttl('k')).toBe(1);
    now = 1_500;
    expect(await kv.get('k')).toBeNull();
    expect(await kv.ttl('k')).toBe(-2);
    await kv.close();
  });
});

describe('createKv', () => {
  it('returns the in-process store when no Redis URL is given', async () => {
    const kv = await createKv(undefined);
    expect(kv).toBeInstanceOf(MemoryKv);
    await kv.close();
  });

  it('rejects, instead of retrying until Redis appears, when nothing listens at the Redis URL', async () => {
    // Nothing will ever listen there: a store that kept retrying would hang until the test's timeout.
    await expect(createKv('redis://127.0.0.1:1', { onError: () => {} })).rejects.toThrow();
  });

  it.skipIf(!REDIS_URL)('returns a connected RedisKv whose raw client answers commands', async () => {
    const kv = await createKv(REDIS_URL);
    expect(kv).toBeInstanceOf(RedisKv);
    expect(await (kv as RedisKv).client.ping()).toBe('PONG');
    await kv.close();
  });
});

describe.skipIf(!REDIS_URL)('RedisKv namespaces', () => {
  it('keeps keys and channels of two namespaces apart on one Redis', async () => {
    const run = `ns-test-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const a = await RedisKv.connect(REDIS_URL as string, { namespace: `${run}:a:` });
    const b = await RedisKv.connect(REDIS_URL as string, { namespace: `${run}:b:` });
    try {
      await a.set('shared-name', 'from a');
      expect(await b.get('shared-name')).toBeNull();
      expect(await a.client.get('shared-name')).toBe('from a');
      expect(await b.client.exists(`${run}:a:shared-name`)).toBe(0);
      const received: string[] = [];
      await b.subscribe('events', (m) => received.push(`b:${new TextDecoder().decode(m)}`));
      await a.subscribe('events', (m) => received.push(`a:${new TextDecoder().decode(m)}`));
      await a.publish('events', new TextEncoder().encode('one'));
      await b.publish('events', new TextEncoder().encode('two'));
      await waitUntil(() => received.length >= 2);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(received.sort()).toEqual(['a:one', 'b:two']);
      // A subscriber in another namespace is not a listener of this one's channel.
      const lonely = await RedisKv.connect(REDIS_URL as string, { namespace: `${run}:c:` });
      expect(await lonely.hasSubscribers('events')).toBe(false);
      const peek = { channel: 'events', key: 'shared-name' };
      expect(await peekOne(lonely, 'peeked', 'v', 10_000, peek)).toEqual({ listened: false, value: null });
      expect(await peekOne(a, 'peeked', 'v', 10_000, peek)).toEqual({ listened: true, value: 'from a' });
      await lonely.del('peeked');
      await lonely.close();
      await a.del('peeked');
      await a.del('shared-name');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
