import { describe, expect, it } from 'vitest';
import { nextAttemptAfterFailure } from '../../src/modules/webhooks/retry-schedule.js';

/** When a failed delivery is due again (docs/webhooks.md, "Outcomes and retries"). */
describe('the webhook retry schedule', () => {
  const at = new Date('2026-01-01T00:00:00.000Z');
  const settings = { baseSeconds: 5, maxAttempts: 8 };
  const delaySeconds = (failed: number, random: number) =>
    ((nextAttemptAfterFailure(failed, settings, at, () => random)?.getTime() ?? Number.NaN) - at.getTime()) /
    1000;

  it('waits the base doubled per failed attempt: 5, 10, 20 ... 320 s without jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((failed) => delaySeconds(failed, 0))).toEqual([
      5, 10, 20, 40, 80, 160, 320,
    ]);
  });

  it('adds at most 10% of the delay as jitter, never less than the delay', () => {
    for (const random of [0, 0.25, 0.5, 0.999999]) {
      const seconds = delaySeconds(3, random);
      expect(seconds).toBeGreaterThanOrEqual(20);
      expect(seconds).toBeLessThan(22);
    }
  });

  it('answers null once the budget’s last attempt failed: the delivery is failed', () => {
    expect(nextAttemptAfterFailure(8, settings, at)).toBeNull();
    expect(nextAttemptAfterFailure(1, { baseSeconds: 5, maxAttempts: 1 }, at)).toBeNull();
  });
});
