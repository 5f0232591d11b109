import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type Kv, MemoryKv, RedisKv } from '../../src/platform/kv/index.js';
import { CONTRACT_COMMAND_TIMEOUT_MS, describeOnRedisTopologies } from '../helpers/redis-topologies.js';

const REDIS_URL = process.env.REDIS_URL;

/**
 * The set operations every `Kv` must share (kept beside kv.contract.test.ts, which holds the
 * string, counter and pub/sub contract). Keys carry a random per-run prefix and are deleted after.
 */
function describeSetContract(name: string, factory: () => Promise<Kv>): void {
  describe(name, () => {
    const prefix = `test:kv-sets:${randomUUID()}:`;
    const usedKeys = new Set<string>();
    let kv: Kv;
    const key = (suffix: string): string => {
      usedKeys.add(prefix + suffix);
      return prefix + suffix;
    };

    beforeAll(async () => {
      kv = await factory();
    });
    afterAll(async () => {
      if (usedKeys.size > 0) await kv.del(...usedKeys);
      await kv.close();
    });

    it('sadd counts only new members and smembers returns each member once', async () => {
      expect(await kv.sadd(key('add'), 'a', 'b', 'a')).toBe(2);
      expect(await kv.sadd(key('add'), 'b', 'c')).toBe(1);
      expect((await kv.smembers(key('add'))).sort()).toEqual(['a', 'b', 'c']);
    });

    it('smembers of a missing key is empty and an empty sadd or srem changes nothing', async () => {
      expect(await kv.smembers(key('missing'))).toEqual([]);
      expect(await kv.sadd(key('missing'))).toBe(0);
      expect(await kv.srem(key('missing'))).toBe(0);
      expect(await kv.ttl(key('missing'))).toBe(-2);
    });

    it('srem counts the members it removed and deletes the set it empties', async () => {
      await kv.sadd(key('rem'), 'a', 'b');
      expect(await kv.srem(key('rem'), 'a', 'zzz')).toBe(1);
      expect(await kv.smembers(key('rem'))).toEqual(['b']);
      expect(await kv.srem(key('rem'), 'b')).toBe(1);
      expect(await kv.ttl(key('rem'))).toBe(-2);
      expect(await kv.srem(key('rem'), 'b')).toBe(0);
    });

    it('del removes a set and reports that it existed', async () => {
      await kv.sadd(key('del'), 'a');
      expect(await kv.del(key('del'))).toBe(1);
      expect(await kv.smembers(key('del'))).toEqual([]);
    });

    it('a set with a TTL is gone once the TTL lapses', async () => {
      await kv.sadd(key('expiring'), 'a');
      expect(await kv.expire(key('expiring'), 100)).toBe(true);
      await sleep(250);
      expect(await kv.smembers(key('expiring'))).toEqual([]);
      expect(await kv.sadd(key('expiring'), 'b')).toBe(1);
      expect(await kv.ttl(key('expiring'))).toBe(-1);
    });

    it('string commands refuse a set key and set commands refuse a string key with WRONGTYPE', async () => {
      await kv.sadd(key('a-set'), 'a');
      await kv.set(key('a-string'), 'v');
      await expect(kv.get(key('a-set'))).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.incr(key('a-set'))).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.swap(key('a-set'), 'v', 1_000)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.sadd(key('a-string'), 'a')).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.smembers(key('a-string'))).rejects.toThrow(/WRONGTYPE/);
      // MGET answers null for a key of another type instead of failing the whole batch.
      expect(await kv.mget([key('a-set'), key('a-string')])).toEqual([null, 'v']);
    });

    it('a plain set replaces a set key with a string', async () => {
      await kv.sadd(key('replaced'), 'a');
      await kv.set(key('replaced'), 'now a string');
      expect(await kv.get(key('replaced'))).toBe('now a string');
    });
  });
}

describeSetContract('MemoryKv sets', async () => new MemoryKv());

describe.skipIf(!REDIS_URL)('RedisKv sets (REDIS_URL)', () => {
  describeSetContract('RedisKv sets', () =>
    RedisKv.connect(REDIS_URL ?? '', { commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  );
});

describeOnRedisTopologies((servers) =>
  describeSetContract('RedisKv sets', () =>
    connectRedis(servers().topology, { commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  ),
);
