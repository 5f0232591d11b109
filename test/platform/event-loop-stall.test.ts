import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EventLoopStalls,
  type RunningCalls,
  STALL_CHECK_INTERVAL_MS,
} from '../../src/platform/event-loop-stall.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';
import type { LogLine } from '../helpers/service-process.js';

/** Blocks the event loop, as an extension's synchronous loop would. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * Resolves after the detector's next look: a timer set now for longer than its interval expires
 * after the detector's (set earlier, for its interval), and Node runs due timers in expiry order.
 */
const afterNextCheck = () => delay(STALL_CHECK_INTERVAL_MS + 1);

async function eventually<T>(check: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await delay(20);
  }
}

describe('event-loop stall detection', () => {
  let detector: EventLoopStalls | undefined;
  afterEach(() => detector?.stop());

  function detect(running?: RunningCalls) {
    const lines: LogLine[] = [];
    const log = createLogger(
      { LOG_LEVEL: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const metrics = createMetrics();
    detector = new EventLoopStalls({ log, counter: metrics.eventLoopStalls, running });
    detector.start();
    const stallsCounted = async () =>
      Number(/^atrium_event_loop_stalls_total (\d+)$/m.exec(await metrics.registry.metrics())?.[1]);
    const stallLines = () => lines.filter((line) => line.msg.startsWith('event loop stalled'));
    const stallLine = () => eventually(() => stallLines()[0], 'a stall line');
    return { detector, lines, stallLines, stallLine, stallsCounted };
  }

  it('logs a loop blocked for over a second once, with the calls in flight, and counts it', async () => {
    const startedAt = Date.now();
    const call = { extension: 'stall', kind: 'rpc', name: 'spin', startedAt };
    const { stallLines, stallLine, stallsCounted } = detect(() => [call]);
    busy(1200);
    const line = await stallLine();
    await afterNextCheck();
    expect(stallLines()).toHaveLength(1);
    expect(line).toMatchObject({
      level: 40,
      msg: 'event loop stalled',
      running: [{ ...call, forMs: expect.any(Number) }],
      ended: [],
    });
    expect(line.blockedMs).toBeGreaterThan(1000);
    expect(await stallsCounted()).toBe(1);
  });

  it('logs nothing for a loop blocked under a second', async () => {
    const { stallLines, stallsCounted } = detect();
    busy(300);
    await afterNextCheck();
    expect(stallLines()).toEqual([]);
    expect(await stallsCounted()).toBe(0);
  });

  it('says so when no call was running', async () => {
    const { stallLine } = detect();
    busy(1200);
    const line = await stallLine();
    expect(line).toMatchObject({ msg: 'event loop stalled; no tracked call was running' });
    expect(line).not.toHaveProperty('running');
  });

  it('names a call that blocked the loop and ended before the stall was noticed, and no call that ended in time', async () => {
    const { detector, stallLine } = detect();
    const before = { extension: 'quick', kind: 'before', name: 'dm.send', startedAt: Date.now() };
    detector.ended(before);
    const spin = { extension: 'stall', kind: 'rpc', name: 'spin', startedAt: Date.now() };
    busy(1200);
    detector.ended(spin);
    const line = await stallLine();
    expect(line).toMatchObject({ msg: 'event loop stalled', running: [], ended: [spin] });
  });

  it('asks every source tracked, and logs one that fails without losing the others', async () => {
    const { detector, stallLine, lines } = detect();
    const call = {
      extension: 'stall',
      kind: 'event',
      name: 'economy.purchase.completed',
      startedAt: Date.now(),
    };
    detector.track(() => {
      throw new Error('no list');
    });
    detector.track(() => [call]);
    busy(1200);
    const line = await stallLine();
    expect(line).toMatchObject({ msg: 'event loop stalled', running: [call] });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'event loop stall: a source of running calls failed',
        err: expect.objectContaining({ message: 'no list' }),
      }),
    );
  });
});
