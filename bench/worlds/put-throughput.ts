import { setTimeout as sleep } from 'node:timers/promises';
import { type CpuUse, cpuWindow } from '../realtime/process-stats.js';
import { type Api, chunkPayload, type Latency, latency } from './harness.js';

/**
 * Measurement 3: 50 editors in closed loops, each PUTting its own chunk with If-Match its last
 * revision (no conflicts), spread over 10 rooms of one world or over 10 worlds.
 */

export const EDITORS = 50;
export const PUT_BYTES = 1024;
const WARM_UP_MS = 1000;

export interface PutResults {
  writesPerSecond: number;
  latency: Latency;
  /** Answers other than 200 during the window, by status. */
  errors: Record<string, number>;
  /** CPU of the service, this process and the whole machine over the window (bench/realtime/process-stats.ts). */
  cpu: CpuUse;
}

export async function measurePuts(
  api: Api,
  targets: readonly { worldId: string; roomId: string }[],
  seconds: number,
  servicePid: number,
): Promise<PutResults> {
  const payload = chunkPayload(PUT_BYTES);
  const paths = Array.from({ length: EDITORS }, (_, e) => {
    const { worldId, roomId } = targets[e % targets.length] as { worldId: string; roomId: string };
    return `/api/worlds/${worldId}/rooms/${roomId}/chunks/${e}/0/0`;
  });
  const revisions = await Promise.all(
    paths.map(
      async (path) =>
        (await api.ok<{ revision: number }>('PUT', path, payload, { 'if-none-match': '*' })).revision,
    ),
  );
  const samples: number[] = [];
  const errors: Record<string, number> = {};
  let measuring = false;
  let stopped = false;
  const editor = async (e: number) => {
    const path = paths[e] as string;
    while (!stopped) {
      const started = performance.now();
      const reply = await api.call<{ revision: number }>('PUT', path, payload, {
        'if-match': `"${revisions[e]}"`,
      });
      if (reply.status === 200) revisions[e] = reply.body.revision;
      // Not expected (each editor writes its own chunk): start again from the chunk's current ETag.
      else revisions[e] = Number((await api.call('GET', path)).headers.get('etag')?.replaceAll('"', ''));
      if (!measuring) continue;
      if (reply.status === 200) samples.push(performance.now() - started);
      else errors[reply.status] = (errors[reply.status] ?? 0) + 1;
    }
  };
  const loops = paths.map((_, e) => editor(e));
  await sleep(WARM_UP_MS);
  measuring = true;
  const started = performance.now();
  const cpu = await cpuWindow(servicePid);
  await sleep(seconds * 1000);
  measuring = false;
  const used = await cpu();
  const elapsed = (performance.now() - started) / 1000;
  stopped = true;
  await Promise.all(loops);
  return { writesPerSecond: samples.length / elapsed, latency: latency(samples), errors, cpu: used };
}
