import { describe, expect, it } from 'vitest';
import { RestartBackoff } from '../../src/platform/cluster/restart-backoff.js';

describe('restart backoff of worker mode', () => {
  it('waits 1 s after a first exit and doubles with each exit after a short run, up to 30 s', () => {
    const backoff = new RestartBackoff();
    const delays = Array.from({ length: 8 }, () => backoff.next(2000));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('starts over at 1 s once a worker ran a minute before it exited', () => {
    const backoff = new RestartBackoff();
    for (let i = 0; i < 5; i++) backoff.next(100);
    expect(backoff.next(60_000)).toBe(1000);
    expect(backoff.next(100)).toBe(2000);
  });

  it('never grows past its ceiling, however many exits in a row', () => {
    const backoff = new RestartBackoff();
    let last = 0;
    for (let i = 0; i < 2000; i++) last = backoff.next(0);
    expect(last).toBe(30_000);
  });
});
