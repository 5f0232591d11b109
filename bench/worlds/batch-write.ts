import { encode } from '@msgpack/msgpack';
import { BULK_CHUNK_BYTES } from './bulk-load.js';
import { type Api, chunkPayload, type Latency, latency, variant } from './harness.js';

/** Measurement 2: one POST …/chunks/batch of 100 new 16 KiB chunks at a time, one request in flight. */

export const BATCH_WRITES = 100;
const WARM_UP = 3;

export interface BatchResults {
  batches: number;
  latency: Latency;
  /** Payload MB (10^6 bytes) per second of the measured requests, back to back. */
  mbPerSecond: number;
}

export async function measureBatchWrites(api: Api, batches: number): Promise<BatchResults> {
  const { worldId, roomId } = await api.world('batch writes');
  const base = chunkPayload(BULK_CHUNK_BYTES);
  const samples: number[] = [];
  for (let b = 0; b < WARM_UP + batches; b++) {
    // Each batch writes new coordinates (row y = b), so every write creates a chunk: expected_revision null.
    const body = encode({
      writes: Array.from({ length: BATCH_WRITES }, (_, x) => ({
        room_id: roomId,
        x,
        y: b,
        z: 0,
        payload: variant(base, b * BATCH_WRITES + x),
        expected_revision: null,
      })),
    });
    const started = performance.now();
    const revisions = await api.batch(worldId, body);
    if (revisions.length !== BATCH_WRITES) throw new Error(`a batch answered ${revisions.length} revisions`);
    if (b >= WARM_UP) samples.push(performance.now() - started);
  }
  const totalMs = samples.reduce((sum, ms) => sum + ms, 0);
  return {
    batches,
    latency: latency(samples),
    mbPerSecond: (batches * BATCH_WRITES * BULK_CHUNK_BYTES) / (totalMs * 1000),
  };
}
