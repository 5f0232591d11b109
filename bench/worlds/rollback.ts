import { setTimeout as sleep } from 'node:timers/promises';
import { encode } from '@msgpack/msgpack';
import { probeHealth } from '../health-probe.js';
import { rssKiB } from '../realtime/process-stats.js';
import { type Api, chunkPayload, variant } from './harness.js';

/**
 * A rollback of 1,000 chunks of 1 MiB: the world is written, every chunk is then overwritten
 * with a small payload, and the rollback restores them all. Meanwhile the service's RSS is read
 * every 50 ms and /healthz is asked one request after another.
 */

export const ROLLBACK_CHUNKS = 1000;
export const ROLLBACK_CHUNK_BYTES = 1024 * 1024;
/** Chunks per seeding batch. */
const SEED_BATCH = 4;
const RSS_EVERY_MS = 50;

export interface RollbackResults {
  seedSeconds: number;
  seconds: number;
  restored: number;
  rssBeforeKiB: number;
  rssPeakKiB: number;
  healthz: { probes: number; worstMs: number };
  /** Chunks read back after the rollback whose bytes differ from what was written (sampled). */
  mismatches: number;
}

export interface SeededWorld {
  worldId: string;
  roomId: string;
  /** The revision before the overwrite: the rollback's target. */
  target: number;
  seedSeconds: number;
}

/** Writes the 1,000 chunks (msgpack batches of 4 MiB), then overwrites each with 256 bytes. */
export async function seedRollbackWorld(api: Api): Promise<SeededWorld> {
  const { worldId, roomId } = await api.world('rollback');
  const write = async (revision: number, writes: Record<string, unknown>[]) =>
    Math.max(
      revision,
      ...(await api.batch(worldId, encode({ expected_content_revision: revision, writes }))),
    );
  const chunk = (x: number, payload: Uint8Array) => ({ room_id: roomId, x, y: 0, z: 0, payload });
  const started = performance.now();
  let target = 0;
  for (let x = 0; x < ROLLBACK_CHUNKS; x += SEED_BATCH)
    target = await write(
      target,
      Array.from({ length: Math.min(SEED_BATCH, ROLLBACK_CHUNKS - x) }, (_, i) =>
        chunk(x + i, payloadOf(x + i)),
      ),
    );
  const small = chunkPayload(256);
  let current = target;
  for (let x = 0; x < ROLLBACK_CHUNKS; x += 500)
    current = await write(
      current,
      Array.from({ length: 500 }, (_, i) => chunk(x + i, small)),
    );
  return { worldId, roomId, target, seedSeconds: (performance.now() - started) / 1000 };
}

const base = chunkPayload(ROLLBACK_CHUNK_BYTES);
const payloadOf = (x: number) => variant(base, x);

/** The rollback of a seeded world, on a service that has not seen its payloads pass (restarted after seeding). */
export async function measureRollback(
  api: Api,
  servicePid: number,
  seeded: SeededWorld,
): Promise<RollbackResults> {
  const { worldId, roomId, target, seedSeconds } = seeded;
  const rssBeforeKiB = await rssKiB(servicePid);
  let rssPeakKiB = rssBeforeKiB;
  const probe = probeHealth(`${api.base}/healthz`);
  let running = true;
  const sampling = (async () => {
    while (running) {
      rssPeakKiB = Math.max(rssPeakKiB, await rssKiB(servicePid));
      await sleep(RSS_EVERY_MS);
    }
  })();
  const started = performance.now();
  const answer = await api.ok<{ restored: number }>('POST', `/api/worlds/${worldId}/rollback`, {
    revision: target,
  });
  const seconds = (performance.now() - started) / 1000;
  running = false;
  const [, healthz] = await Promise.all([sampling, probe.stop()]);

  let mismatches = 0;
  for (let x = 0; x < ROLLBACK_CHUNKS; x += 97) {
    const response = await fetch(`${api.base}/api/worlds/${worldId}/rooms/${roomId}/chunks/${x}/0/0`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    if (!Buffer.from(await response.arrayBuffer()).equals(Buffer.from(payloadOf(x)))) mismatches++;
  }
  return { seedSeconds, seconds, restored: answer.restored, rssBeforeKiB, rssPeakKiB, healthz, mismatches };
}
