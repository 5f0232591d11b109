import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RepeatingPass } from '../../src/platform/repeating-pass.js';

/** A background pass repeated after each one ends (src/platform/repeating-pass.ts). */
describe('RepeatingPass', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const log = () => ({ warn: vi.fn() });
  /** A repeating pass whose passes each wait for `finish()`; `passes()` counts those begun. */
  const heldPasses = (intervalMs: number) => {
    let begun = 0;
    let finishPass: (() => void) | undefined;
    const repeating = new RepeatingPass(
      async () => {
        begun++;
        await new Promise<void>((resolve) => {
          finishPass = resolve;
        });
      },
      { intervalMs, log: log(), name: 'a pass' },
    );
    return { repeating, passes: () => begun, finish: () => finishPass?.() };
  };

  it('resolves idle() at once with no pass running, and only once the pass under way ended', async () => {
    const { repeating, finish } = heldPasses(1000);
    let idle = false;
    await repeating.idle();
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    const waited = repeating.idle().then(() => {
      idle = true;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(idle).toBe(false);
    finish();
    await waited;
    expect(idle).toBe(true);
    await repeating.stop();
  });

  it('runs at once, then the interval after each pass ended, never two at a time', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    let finish: (() => void) | undefined;
    const repeating = new RepeatingPass(
      async () => {
        passes++;
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        running--;
      },
      { intervalMs: 1000, log: log(), name: 'a pass' },
    );
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toBe(1);
    // The pass takes 5 s: no second one meanwhile.
    await vi.advanceTimersByTimeAsync(5000);
    expect(passes).toBe(1);
    finish?.();
    await vi.advanceTimersByTimeAsync(999);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes).toBe(2);
    expect(most).toBe(1);
    finish?.();
    await repeating.stop();
  });

  it('logs a failed pass and runs the next one as planned', async () => {
    const logger = log();
    let passes = 0;
    const repeating = new RepeatingPass(
      async () => {
        passes++;
        if (passes === 1) throw new Error('the database is away');
      },
      { intervalMs: 1000, log: logger, name: 'a pass' },
    );
    repeating.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes).toBe(2);
    expect(logger.warn).toHaveBeenCalledWith({ err: expect.any(Error) }, 'a pass failed');
    await repeating.stop();
  });

  it('stops: waits for the pass under way, says it is stopping, and runs no other', async () => {
    const { repeating, passes, finish } = heldPasses(1000);
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = repeating.stop().then(() => {
      stopped = true;
    });
    expect(repeating.stopping).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(passes()).toBe(1);
  });

  it('runs the next pass at once when woken, or right after the pass under way, and not before start or after stop', async () => {
    const { repeating, passes, finish } = heldPasses(60_000);
    repeating.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes()).toBe(0);
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes()).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    // Idle until its interval; woken, it runs now.
    repeating.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes()).toBe(2);
    // Woken during a pass: the next one follows it, not the interval later.
    repeating.wake();
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes()).toBe(3);
    finish();
    await repeating.stop();
    repeating.wake();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(passes()).toBe(3);
  });

  it('waits the delay a pass answers when shorter than the interval, and the interval when longer', async () => {
    const delays = [300, 120_000];
    let passes = 0;
    const repeating = new RepeatingPass(
      async () => {
        passes++;
        return delays.shift();
      },
      { intervalMs: 60_000, log: log(), name: 'a pass' },
    );
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(299);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes).toBe(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(passes).toBe(3);
    await repeating.stop();
  });

  it('runs the next pass within the delay wakeWithin asks, unless it is due sooner, also when asked during a pass', async () => {
    const { repeating, passes, finish } = heldPasses(60_000);
    repeating.wakeWithin(10);
    await vi.advanceTimersByTimeAsync(10);
    expect(passes()).toBe(0);
    repeating.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(passes()).toBe(1);
    // Asked during the pass: the next follows it within the delay, not the interval later.
    repeating.wakeWithin(500);
    finish();
    await vi.advanceTimersByTimeAsync(499);
    expect(passes()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes()).toBe(2);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    repeating.wakeWithin(1000);
    // A later wish does not put off the pass due sooner.
    repeating.wakeWithin(5000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes()).toBe(3);
    finish();
    await repeating.stop();
  });
});
