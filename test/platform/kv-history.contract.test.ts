import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kv, MemoryKv, RedisKv } from '../../src/platform/kv/index.js';
import { unframePositioned } from '../../src/platform/kv/kv.js';

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

    beforeAll(async () => {
      kv = await factory(`test:${randomUUID()}:`);
    });
    afterAll(() => kv.close());

    it('a new history reads as offset 0 and the next publish continues that epoch at offset 1', async () => {
      const name = channel();
      const start = await kv.readHistory(name, 0, limits);
      expect(start).toEqual({ position: { offset: 0, epoch: expect.any(String) }, entries: [] });
      const position = await kv.publishRecorded(name, bytes('a'), limits);
      expect(position).toEqual({ offset: 1, epoch: start.position.epoch });
    });

    it('subscribers receive each recorded message framed with the position it was recorded at', async () => {
      const name = channel();
      const received: { offset?: number; epoch?: string; body: string }[] = [];
      const unsubscribe = await kv.subscribe(name, (message) => {
        const { position, message: body } = unframePositioned(message);
        received.push({ ...position, body: text(body) });
      });
      const first = await kv.publishRecorded(name, bytes('{"x":1}'), limits);
      await kv.publishRecorded(name, bytes('second'), limits);
      await expect.poll(() => received.length).toBe(2);
      expect(received).toEqual([
        { offset: 1, epoch: first.epoch, body: '{"x":1}' },
        { offset: 2, epoch: first.epoch, body: 'second' },
      ]);
      await unsubscribe();
    });

    it('readHistory returns the messages after an offset in order, binary bytes intact', async () => {
      const name = channel();
      const binary = new Uint8Array([0x83, 0x00, 0xff, 0x3a, 0x0a]);
      await kv.publishRecorded(name, bytes('one'), limits);
      await kv.publishRecorded(name, binary, limits);
      await kv.publishRecorded(name, bytes('three'), limits);
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
      for (let i = 1; i <= 8; i++) await kv.publishRecorded(name, bytes(`m${i}`), limits);
      const read = await kv.readHistory(name, 0, limits);
      expect(read.position.offset).toBe(8);
      expect(read.entries.map((e) => text(e.message))).toEqual(['m4', 'm5', 'm6', 'm7', 'm8']);
    });

    it('channels keep separate offsets', async () => {
      const [a, b] = [channel(), channel()];
      await kv.publishRecorded(a, bytes('a1'), limits);
      await kv.publishRecorded(a, bytes('a2'), limits);
      expect((await kv.publishRecorded(b, bytes('b1'), limits)).offset).toBe(1);
    });

    it('after its messages expire the position stays, so a reader who missed nothing can tell', async () => {
      const name = channel();
      const short = { maxLen: 5, ttlMs: 50 };
      const { epoch } = await kv.publishRecorded(name, bytes('gone soon'), short);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await kv.readHistory(name, 0, short)).toEqual({ position: { offset: 1, epoch }, entries: [] });
    });
  });
}

describeHistoryContract('MemoryKv history', async () => new MemoryKv());

describe.skipIf(!REDIS_URL)('RedisKv history (REDIS_URL)', () => {
  describeHistoryContract('RedisKv history', (namespace) => RedisKv.connect(REDIS_URL ?? '', { namespace }));
});
