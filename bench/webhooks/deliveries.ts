import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { cpuWindow } from '../realtime/process-stats.js';
import type { Contender, WindowFigures } from '../realtime/rounds.js';
import type { Atrium } from '../realtime/servers.js';
import type { Api } from '../worlds/harness.js';
import type { BarePost } from './bare-post.js';

/**
 * Measurement 1: deliveries/s of the service's delivery job (claim 32 due deliveries, sign and post
 * them at once, record each outcome) draining the seeded backlog into the receiver, beside the bare
 * script posting the same signed bodies with the same concurrency (bare-post.ts).
 */

/** The attempts the service's delivery job runs at once (delivery-worker.ts), given to the bare script too. */
export const CONCURRENCY = 32;

/** The job's timer runs a pass every 500 ms: a first delivery comes well within this. */
const FIRST_ARRIVAL_MS = 5000;

const run = promisify(execFile);

/** The receiver's arrivals since the last take, as [created_at, arrival] in epoch ms. */
export async function take(receiverUrl: string): Promise<[number, number][]> {
  const { arrivals, verified } = (await (await fetch(receiverUrl)).json()) as {
    arrivals: [number, number][];
    verified: boolean | null;
  };
  if (verified === false) throw new Error('the receiver got a post whose signature is not valid');
  return arrivals;
}

/** Runs bare-post.ts once, in a process of its own. */
export async function runBarePost(job: BarePost) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/webhooks/bare-post.ts'], {
    env: { ...process.env, BARE_WEBHOOKS: JSON.stringify(job) },
  });
  return JSON.parse(stdout) as { posted: number; failed: number; seconds: number; cores: number };
}

/**
 * The service as a contender: a window enables the backlog's endpoint, starts counting once the
 * first deliveries arrive (the job wakes on its 500 ms timer), counts for `seconds`, and disables
 * the endpoint again (the attempts under way land in the pause before the next window).
 */
export function serviceDeliveries(
  atrium: Atrium,
  admin: Api,
  endpointId: string,
  receiverUrl: string,
): Contender<WindowFigures> {
  const enabled = (enabled: boolean) => admin.ok('PATCH', `/api/admin/webhooks/${endpointId}`, { enabled });
  return {
    name: `the service's delivery job, ${CONCURRENCY} at once`,
    async window(seconds) {
      await enabled(true);
      for (const end = performance.now() + FIRST_ARRIVAL_MS; (await take(receiverUrl)).length === 0; ) {
        if (performance.now() > end) throw new Error('no delivery arrived: is the backlog gone?');
        await sleep(10);
      }
      const cpu = await cpuWindow(atrium.pid);
      const started = performance.now();
      await sleep(seconds * 1000);
      const arrived = (await take(receiverUrl)).length;
      const elapsed = (performance.now() - started) / 1000;
      const used = await cpu();
      await enabled(false);
      return { perSecond: arrived / elapsed, ...used };
    },
  };
}

/** The bare script as a contender, a process per window: `clientCores` is that process's CPU. */
export function bareDeliveries(receiverUrl: string, secret: string): Contender<WindowFigures> {
  return {
    name: `bare node:http script, ${CONCURRENCY} at once`,
    async window(seconds) {
      await take(receiverUrl);
      const done = await runBarePost({ url: receiverUrl, secret, seconds, concurrency: CONCURRENCY });
      const arrived = (await take(receiverUrl)).length;
      if (done.failed > 0 || arrived !== done.posted)
        throw new Error(`the bare script posted ${done.posted} (${done.failed} failed), ${arrived} arrived`);
      return {
        perSecond: done.posted / done.seconds,
        serverCores: Number.NaN,
        clientCores: done.cores,
        machineCores: Number.NaN,
      };
    },
  };
}
