import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { rssKiB, summedOverChildren } from '../realtime/process-stats.js';
import { steadyRss } from '../realtime/rss-readings.js';
import { median } from '../realtime/stats.js';

/** RSS of a server: its process and the worker processes it forked (WORKERS), summed. */
export function treeRssKiB(pid: number): Promise<number> {
  return summedOverChildren(pid, rssKiB);
}

/** The median of 5 readings half a second apart, after 3 s to settle. */
export async function settledTreeRssKiB(pid: number): Promise<number> {
  await sleep(3_000);
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    if (i > 0) await sleep(500);
    readings.push(await treeRssKiB(pid));
  }
  return median(readings);
}

/**
 * The tree's RSS once every process of it stopped moving (steadyRss: 20 s of readings within a
 * tolerance, at most 90 s): an idle Node process hands pooled heap pages back to the OS seconds to
 * tens of seconds after its last work, which would otherwise land in a per-socket figure.
 */
export async function steadyTreeRssKiB(pid: number): Promise<{ kib: number; steady: boolean }> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const { kib, steady } = await steadyRss([pid, ...children.split(' ').filter(Boolean).map(Number)], 0);
  return { kib: kib.reduce((sum, k) => sum + k, 0), steady };
}
