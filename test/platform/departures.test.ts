import { describe, expect, it } from 'vitest';
import { Departures } from '../../src/platform/gateway/departures.js';

/** A departure that runs until the test ends it, recording when it started. */
function held(started: string[], name: string) {
  let end!: (failed?: boolean) => void;
  const done = new Promise<void>((resolve, reject) => {
    end = (failed) => (failed ? reject(new Error(`${name} failed`)) : resolve());
  });
  return {
    run: () => {
      started.push(name);
      return done;
    },
    end: (failed?: boolean) => end(failed),
  };
}

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Departures', () => {
  it('runs at most its concurrency at once, the others one as each ends, in the order they came', async () => {
    const departures = new Departures(2);
    const started: string[] = [];
    const all = ['a', 'b', 'c', 'd', 'e'].map((name) => held(started, name));
    for (const departure of all) departures.run(departure.run);
    expect(started).toEqual(['a', 'b']);
    all[1]?.end();
    await settled();
    expect(started).toEqual(['a', 'b', 'c']);
    // A failed departure hands its place on all the same.
    all[0]?.end(true);
    await settled();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    all[2]?.end();
    all[3]?.end();
    await settled();
    expect(started).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('once drained, starts every waiting departure at once, and every later one as it comes', () => {
    const departures = new Departures(1);
    const started: string[] = [];
    for (const name of ['a', 'b', 'c']) departures.run(held(started, name).run);
    expect(started).toEqual(['a']);
    departures.drain();
    expect(started).toEqual(['a', 'b', 'c']);
    departures.run(held(started, 'd').run);
    expect(started).toEqual(['a', 'b', 'c', 'd']);
  });
});
