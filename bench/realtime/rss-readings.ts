import { setTimeout as sleep } from 'node:timers/promises';
import { rssKiB } from './process-stats.js';
import { median } from './stats.js';

/** RSS readings of several processes side by side: settled a fixed time after an event, or once steady. */

export const SETTLE_MS = 3_000;
export const RSS_SAMPLES = 5;
export const RSS_SAMPLE_INTERVAL_MS = 500;
/**
 * RSS of an idle node process still moves for a while: V8 gives pooled heap pages (freed by GCs,
 * not counted in its heap size) back to the OS only when its memory reducer decides the process is
 * idle, seconds to tens of seconds later, in steps of tens of MiB. A reading counts as steady when
 * STEADY_WINDOW_MS of once-a-second samples stay within the tolerance; waits are capped so the
 * benchmark always ends.
 */
export const STEADY_WINDOW_MS = 20_000;
export const STEADY_TOLERANCE_KIB = 2_048;
/** Or within this fraction of the RSS when that is more: periodic work keeps a big process moving a little. */
export const STEADY_TOLERANCE_RATIO = 0.01;
export const STEADY_MAX_MS = 90_000;

/** Waits SETTLE_MS, then the median of RSS_SAMPLES readings per process, sampled side by side. */
export async function settledRss(pids: number[]): Promise<number[]> {
  await sleep(SETTLE_MS);
  const samples: number[][] = pids.map(() => []);
  for (let i = 0; i < RSS_SAMPLES; i++) {
    if (i > 0) await sleep(RSS_SAMPLE_INTERVAL_MS);
    const readings = await Promise.all(pids.map(rssKiB));
    for (const [index, kib] of readings.entries()) samples[index]?.push(kib);
  }
  return samples.map(median);
}

export interface SteadyRss {
  kib: number[];
  /** False when the wait hit its cap before RSS stopped moving. */
  steady: boolean;
}

/**
 * RSS once it stopped moving (see STEADY_WINDOW_MS) and at least `minMs` from now: the median of the
 * steady window, per process.
 */
export async function steadyRss(pids: number[], minMs: number): Promise<SteadyRss> {
  const started = performance.now();
  const windowSamples = STEADY_WINDOW_MS / 1000 + 1;
  const history: number[][] = [];
  for (;;) {
    history.push(await Promise.all(pids.map(rssKiB)));
    const waitedMs = performance.now() - started;
    const window = history.slice(-windowSamples);
    const column = (index: number) => window.map((sample) => sample[index] as number);
    const steady =
      window.length === windowSamples &&
      pids.every(
        (_, index) =>
          Math.max(...column(index)) - Math.min(...column(index)) <=
          Math.max(STEADY_TOLERANCE_KIB, STEADY_TOLERANCE_RATIO * median(column(index))),
      );
    if ((steady && waitedMs >= minMs) || waitedMs >= STEADY_MAX_MS) {
      return { kib: pids.map((_, index) => median(column(index))), steady };
    }
    await sleep(1000);
  }
}
