import { describe, expect, it } from 'vitest';
import { type SubscriptionChange, SubscriptionWrites } from '../../src/platform/kv/subscription-writes.js';

/** The commands a SubscriptionWrites sent, each answered by `answer`. */
function recorder(answer: (change: SubscriptionChange, channels: readonly string[]) => Promise<unknown>) {
  const sent: [SubscriptionChange, string[]][] = [];
  const writes = new SubscriptionWrites((change, channels) => {
    sent.push([change, [...channels]]);
    return answer(change, channels);
  });
  return { sent, writes };
}

describe("the subscriber connection's changes", () => {
  it('go out as one command per run of the same change, in the order they were asked for', async () => {
    const { sent, writes } = recorder(async () => undefined);
    await Promise.all([
      writes.change('subscribe', 'a'),
      writes.change('subscribe', 'b'),
      writes.change('unsubscribe', 'c'),
      writes.change('subscribe', 'c'),
      writes.change('subscribe', 'd'),
    ]);
    expect(sent).toEqual([
      ['subscribe', ['a', 'b']],
      ['unsubscribe', ['c']],
      ['subscribe', ['c', 'd']],
    ]);
  });

  it('gather the changes asked for by separate callbacks of one turn of the event loop, and their promise chains', async () => {
    const { sent, writes } = recorder(async () => undefined);
    const asked: Promise<void>[] = [];
    // Two callbacks of one check phase, as two sockets' close callbacks are of one I/O phase.
    await new Promise<void>((resolve) => {
      setImmediate(() => asked.push(writes.change('unsubscribe', 'first-callback')));
      setImmediate(() => {
        asked.push(Promise.resolve().then(() => writes.change('unsubscribe', 'second-callback, later')));
        resolve();
      });
    });
    await Promise.all(asked);
    await writes.change('subscribe', 'next-turn');
    expect(sent).toEqual([
      ['unsubscribe', ['first-callback', 'second-callback, later']],
      ['subscribe', ['next-turn']],
    ]);
  });

  it('split a long run so no command carries more than 500 channels', async () => {
    const { sent, writes } = recorder(async () => undefined);
    await Promise.all(Array.from({ length: 1_201 }, (_, i) => writes.change('subscribe', `c${i}`)));
    expect(sent.map(([, channels]) => channels.length)).toEqual([500, 500, 201]);
    expect(sent.flatMap(([, channels]) => channels)).toEqual(
      Array.from({ length: 1_201 }, (_, i) => `c${i}`),
    );
  });

  it('reject every change of a command that failed, and only those', async () => {
    const refused = new Error('connection lost');
    const { writes } = recorder(async (change) => {
      if (change === 'unsubscribe') throw refused;
    });
    const outcomes = await Promise.allSettled([
      writes.change('subscribe', 'a'),
      writes.change('unsubscribe', 'b'),
      writes.change('unsubscribe', 'c'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(outcomes.slice(1).map((o) => (o as PromiseRejectedResult).reason)).toEqual([refused, refused]);
  });

  it('reject the changes of a command that could not even be sent', async () => {
    const writes = new SubscriptionWrites(() => {
      throw new Error('RedisKv is closed');
    });
    await expect(writes.change('subscribe', 'a')).rejects.toThrow('RedisKv is closed');
  });
});
