import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKv } from '../../src/platform/kv/redis-kv.js';
import { hasRedisServer, RedisServer } from '../helpers/redis-server.js';

const limits = { maxLen: 100, ttlMs: 60_000 };
const bytes = (text: string) => new TextEncoder().encode(text);

/**
 * Event histories across a replica's promotion (docs/recovery.md): Redis replicates
 * asynchronously, so a promoted replica may lack the last events the old primary recorded and
 * would number new events with their offsets. A history that reaches the promoted replica starts a
 * new epoch, so a reader from before the failover is told to refetch.
 */
describe.skipIf(!hasRedisServer())(
  'event histories on a promoted replica (needs redis-server on PATH)',
  () => {
    let primary: RedisServer;
    let replica: RedisServer;
    let onPrimary: RedisKv;

    beforeAll(async () => {
      primary = await RedisServer.start();
      replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
      onPrimary = await RedisKv.connect(primary.url, { namespace: 'promotion:', onError: () => {} });
    });

    afterAll(async () => {
      await onPrimary?.close();
      await replica?.stop();
      await primary?.stop();
    });

    it('starts a new epoch on the promoted replica, for readers and for the next publish', async () => {
      const [read, written] = ['read-after-promotion', 'written-after-promotion'];
      // The replica's first sync changes the primary's replication id (Redis makes a new one with
      // the backlog it creates then), which starts new epochs: wait until it is attached.
      await expect.poll(() => onPrimary.client.call('WAIT', '1', '200'), { timeout: 10_000 }).toBe(1);
      const [before] = await onPrimary.publishRecorded([read, written], bytes('e1'), limits);
      await onPrimary.publishRecorded([read, written], bytes('e2'), limits);
      // The replica has both events before it is promoted: nothing was lost, yet nothing proves it.
      await expect.poll(() => onPrimary.client.call('WAIT', '1', '200'), { timeout: 10_000 }).toBe(1);
      const onReplica = await RedisKv.connect(replica.url, { namespace: 'promotion:', onError: () => {} });
      try {
        const replicated = await onReplica.client.call('HGET', 'hist:{read-after-promotion}:meta', 'e');
        expect(replicated).toBe(before?.epoch);
        await onReplica.client.call('REPLICAOF', 'NO', 'ONE');

        const afterPromotion = await onReplica.readHistory(read, 1, limits);
        expect(afterPromotion.position.epoch).not.toBe(before?.epoch);
        expect(afterPromotion).toEqual({
          position: { offset: 0, epoch: afterPromotion.position.epoch },
          entries: [],
        });
        const [next] = await onReplica.publishRecorded([written], bytes('e3'), limits);
        expect(next?.offset).toBe(1);
        expect(next?.epoch).not.toBe(before?.epoch);
        // The new primary's histories keep their epoch from then on.
        const [again] = await onReplica.publishRecorded([written], bytes('e4'), limits);
        expect(again).toEqual({ offset: 2, epoch: next?.epoch });
      } finally {
        await onReplica.close();
      }
    });
  },
);
