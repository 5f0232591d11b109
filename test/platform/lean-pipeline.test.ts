import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { IOREDIS_PIPELINE, useLeanPipelines } from '../../src/platform/kv/lean-pipeline.js';
import { defineScripts } from '../../src/platform/kv/redis-scripts.js';

const REDIS_URL = process.env.REDIS_URL;

useLeanPipelines();

/** A client that never connects: building a pipeline needs none. */
function idleClients() {
  const redis = new Redis({ lazyConnect: true, enableAutoPipelining: true });
  const cluster = new Cluster([{ host: '127.0.0.1', port: 7 }], { lazyConnect: true });
  for (const client of [redis, cluster]) defineScripts(client);
  return [redis, cluster] as const;
}

/** Own properties as names with the type of their value, in their order. */
function shape(object: object): string[] {
  return Reflect.ownKeys(object).map((key) => {
    const value = (object as Record<PropertyKey, unknown>)[key];
    return `${String(key)}: ${value instanceof Promise ? 'promise' : typeof value}`;
  });
}

describe('lean ioredis pipelines', () => {
  it.each([0, 1])(
    "builds pipelines with ioredis's own properties, in order, but for an own length (client %i)",
    (which) => {
      const client = idleClients()[which] as Redis | Cluster;
      const original = new IOREDIS_PIPELINE(client as never);
      const lean = client.pipeline();
      expect(Object.getPrototypeOf(lean)).toBe(IOREDIS_PIPELINE.prototype);
      expect(lean).toBeInstanceOf(IOREDIS_PIPELINE);
      expect(shape(original)).toContain('length: number');
      expect(shape(lean)).toEqual(shape(original).filter((entry) => entry !== 'length: number'));
      expect(Object.getOwnPropertyDescriptor(lean, 'length')).toBeUndefined();
      expect((lean as unknown as { isCluster: boolean }).isCluster).toBe(which === 1);
      // The defined scripts are copied onto the pipeline, as ioredis does.
      expect(typeof (lean as unknown as Record<string, unknown>).readHistoryBuffer).toBe('function');
    },
  );

  it('counts the queued commands in length, through the prototype', () => {
    const [client] = idleClients();
    const pipeline = client.pipeline();
    expect(pipeline.length).toBe(0);
    pipeline.get('a').set('b', '1').incr('c');
    expect(pipeline.length).toBe(3);
  });

  it('leaves ioredis building lean pipelines when asked again', () => {
    useLeanPipelines();
    const [client] = idleClients();
    expect(Object.getOwnPropertyDescriptor(client.pipeline(), 'length')).toBeUndefined();
  });
});

describe.skipIf(!REDIS_URL)('lean ioredis pipelines on Redis', () => {
  const redis = new Redis(REDIS_URL as string, {
    enableAutoPipelining: true,
    keyPrefix: `lean-${randomUUID()}:`,
  });
  defineScripts(redis);
  afterAll(() => redis.quit());

  it('runs auto-pipelined commands, a pipeline and a transaction with their replies in order', async () => {
    const [set, got, both] = await Promise.all([
      redis.set('a', 'one'),
      redis.get('a'),
      redis.mget('a', 'missing'),
    ]);
    expect([set, got, both]).toEqual(['OK', 'one', ['one', null]]);
    expect(await redis.pipeline().set('b', '2').incr('b').get('b').exec()).toEqual([
      [null, 'OK'],
      [null, 3],
      [null, '3'],
    ]);
    expect(await redis.multi().incr('c').incr('c').exec()).toEqual([
      [null, 1],
      [null, 2],
    ]);
    await redis.del('a', 'b', 'c');
  });

  it('runs a defined script inside an auto-pipelined batch', async () => {
    const script = redis as unknown as { shardSubscribers(key: string): Promise<unknown> };
    const [subscribers, value] = await Promise.all([script.shardSubscribers('nobody'), redis.get('nothing')]);
    expect(subscribers).toBe(0);
    expect(value).toBeNull();
  });
});
