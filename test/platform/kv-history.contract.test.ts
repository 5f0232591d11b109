import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type Kv, MemoryKv, RedisKv } from '../../src/platform/kv/index.js';
import { unframePositioned } from '../../src/platform/kv/kv.js';
import { CONTRACT_COMMAND_TIMEOUT_MS, describeOnRedisTopologies } from '../helpers/redis-topologies.js';

const REDIS_URL = process.env.REDIS_URL;
const limits = { maxLen: 5, ttlMs: 60_000 };
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (message: Uint8Array) => new TextDecoder().decode(message);

/**
 * Recorded channels (publishRecorded / readHistory), the same on every `Kv`: the history the
 * gateway replays missed events from. Each test uses a channel of its own, under a random
 * namespace so runs sharing one Redis never meet.
 */
function describeHistoryContract(name: string, factory: (namespace: string) => Promise<Kv>): void {
  describe(name, () => {
    let kv: Kv;
    const channel = () => `history-test:${randomUUID()}`;

    /** A recorded publish to one channel, answering its position. */
    const publishOne = async (name: string, message: Uint8Array, history = limits) => {
      const [position] = await kv.publishRecorded([name], message, history);
      if (!position) throw new Error('publishRecorded answered no position');
      return position;
    };

    beforeAll(async () => {
      kv = await factory(`test:${randomUUID()}:`);
    });
    afterAll(() => kv.close());

    it('a new history reads as offset 0 and the next publish continues that epoch at offset 1', async () => {
      const name = channel();
      const start = await kv.readHistory(name, 0, limits);
      expect(start).toEqual({ position: { offset: 0, epoch: expect.any(String) }, entries: [] });
      const position = await publishOne(name, bytes('a'), limits);
      expect(position).toEqual({ offset: 1, epoch: start.position.epoch });
    });

    it('subscribers receive each recorded message framed with the position it was recorded at', async () => {
      const name = channel();
      const received: { offset?: number; epoch?: string; body: string }[] = [];
      const unsubscribe = await kv.subscribe(name, (message) => {
        const { position, message: body } = unframePositioned(message);
        received.push({ ...position, body: text(body) });
      });
      const first = await publishOne(name, bytes('{"x":1}'), limits);
      await publishOne(name, bytes('second'), limits);
      await expect.poll(() => received.length).toBe(2);
      expect(received).toEqual([
        { offset: 1, epoch: first.epoch, body: '{"x":1}' },
        { offset: 2, epoch: first.epoch, body: 'second' },
      ]);
      await unsubscribe();
    });

    it('dropHistories forgets each history: the next read and publish start a new epoch, others are kept', async () => {
      const [dropped, other, kept] = [channel(), channel(), channel()];
      const before = await kv.publishRecorded([dropped, other, kept], bytes('a'), limits);
      await kv.dropHistories([dropped, other]);
      const after = await kv.readHistory(dropped, 0, limits);
      expect(after).toEqual({ position: { offset: 0, epoch: expect.any(String) }, entries: [] });
      expect(after.position.epoch).not.toBe(before[0]?.epoch);
      const [next] = await kv.publishRecorded([other], bytes('b'), limits);
      expect(next).toEqual({ offset: 1, epoch: expect.not.stringMatching(`^${before[1]?.epoch}$`) });
      expect((await kv.readHistory(kept, 0, limits)).entries).toHaveLength(1);
      await expect(kv.dropHistories([])).resolves.toBeUndefined();
    });

    it('readHistory returns the messages after an offset in order, binary bytes intact', async () => {
      const name = channel();
      const binary = new Uint8Array([0x83, 0x00, 0xff, 0x3a, 0x0a]);
      await publishOne(name, bytes('one'), limits);
      await publishOne(name, binary, limits);
      await publishOne(name, bytes('three'), limits);
      const read = await kv.readHistory(name, 1, limits);
      expect(read.position.offset).toBe(3);
      expect(read.entries.map((e) => e.offset)).toEqual([2, 3]);
      expect([...(read.entries[0]?.message ?? [])]).toEqual([...binary]);
      expect(text(read.entries[1]?.message ?? new Uint8Array())).toBe('three');
      expect(read.entries[0]?.at).toBeGreaterThan(Date.now() - 60_000);
      expect((await kv.readHistory(name, 3, limits)).entries).toEqual([]);
    });

    it('only the last maxLen messages are kept', async () => {
      const name = channel();
      for (let i = 1; i <= 8; i++) await publishOne(name, bytes(`m${i}`), limits);
      const read = await kv.readHistory(name, 0, limits);
      expect(read.position.offset).toBe(8);
      expect(read.entries.map((e) => text(e.message))).toEqual(['m4', 'm5', 'm6', 'm7', 'm8']);
    });

    it('channels keep separate offsets', async () => {
      const [a, b] = [channel(), channel()];
      await publishOne(a, bytes('a1'), limits);
      await publishOne(a, bytes('a2'), limits);
      expect((await publishOne(b, bytes('b1'), limits)).offset).toBe(1);
    });

    it('one publish to several channels records the message in each at its own offset and delivers it to each', async () => {
      const [a, b] = [channel(), channel()];
      await publishOne(a, bytes('a1'), limits);
      const received: string[] = [];
      const stops = await Promise.all(
        [a, b].map((name) =>
          kv.subscribe(name, (message) => {
            const { position, message: body } = unframePositioned(message);
            received.push(`${name === a ? 'a' : 'b'}@${position?.offset}:${text(body)}`);
          }),
        ),
      );
      const [atA, atB] = await kv.publishRecorded([a, b], bytes('both'), limits);
      expect(atA).toEqual({ offset: 2, epoch: (await kv.readHistory(a, 0, limits)).position.epoch });
      expect(atB).toEqual({ offset: 1, epoch: (await kv.readHistory(b, 0, limits)).position.epoch });
      await expect.poll(() => received.length).toBe(2);
      expect(received.sort()).toEqual(['a@2:both', 'b@1:both']);
      expect((await kv.readHistory(a, 1, limits)).entries.map((e) => text(e.message))).toEqual(['both']);
      expect((await kv.readHistory(b, 0, limits)).entries.map((e) => text(e.message))).toEqual(['both']);
      await Promise.all(stops.map((stop) => stop()));
    });

    it('a publish to no channel records and delivers nothing', async () => {
      expect(await kv.publishRecorded([], bytes('nowhere'), limits)).toEqual([]);
    });

    it('after its messages expire the position stays, so a reader who missed nothing can tell', async () => {
      const name = channel();
      const short = { maxLen: 5, ttlMs: 50 };
      const { epoch } = await publishOne(name, bytes('gone soon'), short);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await kv.readHistory(name, 0, short)).toEqual({ position: { offset: 1, epoch }, entries: [] });
    });
  });
}

describeHistoryContract('MemoryKv history', async () => new MemoryKv());

describeOnRedisTopologies((servers) =>
  describeHistoryContract('RedisKv history', (namespace) =>
    connectRedis(servers().topology, { namespace, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  ),
);

describe.skipIf(!REDIS_URL)('RedisKv history (REDIS_URL)', () => {
  describeHistoryContract('RedisKv history', (namespace) =>
    RedisKv.connect(REDIS_URL ?? '', { namespace, commandTimeoutMs: CONTRACT_COMMAND_TIMEOUT_MS }),
  );

  it('keeps the histories of a publish to several channels under its namespace', async () => {
    const namespace = `test:${randomUUID()}:`;
    const kv = await RedisKv.connect(REDIS_URL ?? '', { namespace });
    const raw = await RedisKv.connect(REDIS_URL ?? '');
    try {
      await kv.publishRecorded(['ns-a', 'ns-b'], bytes('x'), limits);
      const keys = await raw.client.keys(`${namespace}*`);
      expect(keys.sort()).toEqual(
        ['hist:{ns-a}:meta', 'hist:{ns-a}:stream', 'hist:{ns-b}:meta', 'hist:{ns-b}:stream'].map(
          (key) => namespace + key,
        ),
      );
      await raw.del(...keys);
    } finally {
      await kv.close();
      await raw.close();
    }
  });
});
