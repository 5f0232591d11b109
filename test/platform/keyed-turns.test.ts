import { describe, expect, it } from 'vitest';
import { KeyedTurns } from '../../src/platform/keyed-turns.js';

/** A promise with its resolve and reject, to hold a task open until the test lets it finish. */
function gate<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('KeyedTurns', () => {
  it('starts a task of a key only after the previous task of that key ended, in arrival order', async () => {
    const turns = new KeyedTurns();
    const started: string[] = [];
    const first = gate();
    const a = turns.run('world', async () => {
      started.push('a');
      await first.promise;
      return 'a';
    });
    const b = turns.run('world', async () => {
      started.push('b');
      return 'b';
    });
    const c = turns.run('world', async () => {
      started.push('c');
      return 'c';
    });
    await Promise.resolve();
    expect(started).toEqual(['a']);
    first.resolve();
    expect(await Promise.all([a, b, c])).toEqual(['a', 'b', 'c']);
    expect(started).toEqual(['a', 'b', 'c']);
  });

  it('runs tasks of different keys side by side', async () => {
    const turns = new KeyedTurns();
    const held = gate();
    const slow = turns.run('one', () => held.promise);
    const other = await turns.run('two', async () => 'ran while one was held');
    expect(other).toBe('ran while one was held');
    held.resolve();
    await slow;
  });

  it("gives a failed task's error to its own caller and still runs the next task of the key", async () => {
    const turns = new KeyedTurns();
    const failing = gate();
    const failed = turns.run('world', () => failing.promise);
    const next = turns.run('world', async () => 'next');
    failing.reject(new Error('lock lost'));
    await expect(failed).rejects.toThrow('lock lost');
    expect(await next).toBe('next');
  });

  it('forgets a key once its queue is empty, so idle keys hold no memory', async () => {
    const turns = new KeyedTurns();
    await Promise.all([turns.run('a', async () => 1), turns.run('b', async () => 2)]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(turns.size).toBe(0);
  });
});
