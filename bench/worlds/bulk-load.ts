import { decode } from '@msgpack/msgpack';
import type { ChunksPage, RoomChunk } from '../../protocol/room-content.js';
import { authedSocket } from '../realtime/ws-client.js';
import { type Api, chunkPayload, Frames, progress, type Sql, variant } from './harness.js';

/** Measurement 1: loading a room of 1,000 chunks of 16 KiB over REST and the socket, beside plain SQL. */

export const BULK_CHUNKS = 1000;
export const BULK_CHUNK_BYTES = 16 * 1024;
const SEED_BATCH = 100;
/** The ceiling: every live payload of the room in one statement (heads only, no as-of lookup). */
export const CEILING_SQL =
  'select r.payload from chunks c join chunk_revisions r on r.id = c.revision where c.room_id = $1 and not c.deleted';

export interface BulkWorld {
  worldId: string;
  roomId: string;
}

export interface BulkResults {
  /** MB/s (10^6 payload bytes per second) of each measured repetition. */
  rest: number[];
  socket: number[];
  ceiling: number[];
  /** Payload bytes, chunks and responses that were not what was seeded. */
  problems: string[];
}

const at = (i: number) => ({ x: i % 10, y: Math.floor(i / 10) % 10, z: Math.floor(i / 100) });

export async function seedBulkWorld(api: Api): Promise<BulkWorld> {
  const { worldId, roomId } = await api.world('bulk load');
  const base = chunkPayload(BULK_CHUNK_BYTES);
  for (let first = 0; first < BULK_CHUNKS; first += SEED_BATCH) {
    const writes = Array.from({ length: SEED_BATCH }, (_, j) => ({
      room_id: roomId,
      ...at(first + j),
      payload: variant(base, first + j),
      expected_revision: null,
    }));
    await api.batch(worldId, writes);
  }
  progress(
    `bulk world: ${BULK_CHUNKS} chunks of ${BULK_CHUNK_BYTES} bytes written in batches of ${SEED_BATCH}`,
  );
  return { worldId, roomId };
}

const payloadBytes = (chunks: readonly { payload: Uint8Array | null }[]) =>
  chunks.reduce((sum, c) => sum + (c.payload?.byteLength ?? 0), 0);

/** `reps` interleaved repetitions of REST, socket and SQL after one warm-up of each. */
export async function measureBulkLoad(
  api: Api,
  wsUrl: string,
  { worldId, roomId }: BulkWorld,
  sql: Sql,
  reps: number,
): Promise<BulkResults> {
  const expected = BULK_CHUNKS * BULK_CHUNK_BYTES;
  const results: BulkResults = { rest: [], socket: [], ceiling: [], problems: [] };
  const check = (what: string, chunks: number, bytes: number) => {
    if (chunks !== BULK_CHUNKS || bytes !== expected)
      results.problems.push(`${what}: ${chunks} chunks, ${bytes} bytes (seeded ${BULK_CHUNKS}, ${expected})`);
  };
  const frames = new Frames(await authedSocket(wsUrl, api.token));
  let pageBytes = 0;
  let pageChunks = 0;
  frames.onEvent = (frame) => {
    if (frame.t !== 'chunks.page') return;
    const { chunks } = frame.d as ChunksPage;
    pageChunks += chunks.length;
    pageBytes += payloadBytes(chunks);
  };
  const timed = async (run: () => Promise<void>) => {
    const started = performance.now();
    await run();
    return expected / ((performance.now() - started) * 1000);
  };
  let restChecked = false; // decoded once, in the warm-up, so the measured reads only read
  const rest = () =>
    timed(async () => {
      const response = await fetch(`${api.base}/api/worlds/${worldId}/rooms/${roomId}/content`, {
        headers: { authorization: `Bearer ${api.token}`, accept: 'application/msgpack' },
      });
      const body = new Uint8Array(await response.arrayBuffer());
      if (response.status !== 200) results.problems.push(`REST content answered ${response.status}`);
      else if (!restChecked) {
        restChecked = true;
        const document = decode(body) as { count: number; chunks: RoomChunk[] };
        check('REST content', document.chunks.length, payloadBytes(document.chunks));
      }
    });
  const socket = () =>
    timed(async () => {
      pageBytes = pageChunks = 0;
      const ack = await frames.request<{ count: number }>('chunks.load', {
        world_id: worldId,
        room_id: roomId,
      });
      check('chunks.load', Math.min(ack.count, pageChunks), pageBytes);
    });
  const ceiling = () =>
    timed(async () => {
      const rows = await sql.query<{ payload: Uint8Array }>(CEILING_SQL, [roomId], 'bench_room_payloads');
      check('ceiling SQL', rows.length, payloadBytes(rows));
    });
  try {
    await rest();
    await socket();
    await ceiling();
    for (let rep = 0; rep < reps; rep++) {
      results.rest.push(await rest());
      results.socket.push(await socket());
      results.ceiling.push(await ceiling());
    }
    return results;
  } finally {
    await frames.close();
  }
}
