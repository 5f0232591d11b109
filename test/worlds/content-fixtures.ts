import { decode, encode } from '@msgpack/msgpack';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import type { App } from '../../src/app.js';
import { HistoryRetention, type RetentionSettings } from '../../src/modules/worlds/history-retention.js';
import { bearer } from '../helpers/accounts.js';
import { queryRows } from '../helpers/database.js';
import { sampleChunk } from '../helpers/worlds.js';

/** What the tests of rollback, retention and the content-bytes quota share. */

type Node = Pick<App, 'http'>;

/** A chunk whose codec bytes are exactly `size` long (its props carry a filler string). */
export function chunkOfSize(id: string, size: number): Buffer {
  const base = encodeChunk(sampleChunk(id, 1, { fill: '' })).byteLength;
  const sized = Buffer.from(encodeChunk(sampleChunk(id, 1, { fill: 'x'.repeat(size - base) })));
  if (sized.byteLength !== size) throw new Error(`chunkOfSize: got ${sized.byteLength} bytes`);
  return sized;
}

/** One write of a msgpack batch: codec bytes, or a delete. */
export interface BatchWrite {
  room_id: string;
  x: number;
  y: number;
  z: number;
  payload?: Uint8Array;
  delete?: true;
}

/** POST …/chunks/batch as msgpack, applying only at `expected` (so the writes need no preconditions). */
export function batch(node: Node, token: string, worldId: string, expected: number, writes: BatchWrite[]) {
  return node.http.inject({
    method: 'POST',
    url: `/api/worlds/${worldId}/chunks/batch`,
    headers: { ...bearer(token), 'content-type': 'application/msgpack' },
    payload: Buffer.from(encode({ expected_content_revision: expected, writes })),
  });
}

/** A room's live chunks, loaded as one document: payload by "x,y,z". */
export async function roomPayloads(
  node: Node,
  token: string,
  worldId: string,
  roomId: string,
): Promise<Map<string, Buffer>> {
  const response = await node.http.inject({
    method: 'GET',
    url: `/api/worlds/${worldId}/rooms/${roomId}/content`,
    headers: bearer(token),
  });
  if (response.statusCode !== 200) throw new Error(`content: ${response.statusCode} ${response.body}`);
  const document = decode(response.rawPayload) as {
    chunks: { x: number; y: number; z: number; payload: Uint8Array }[];
  };
  return new Map(document.chunks.map((c) => [`${c.x},${c.y},${c.z}`, Buffer.from(c.payload)]));
}

/**
 * The world's stored content bytes (the counter its quota reads), beside the sum recomputed from
 * every revision it keeps, live heads and history alike (the two must agree), and its revision
 * count.
 */
export async function contentState(
  node: Pick<App, 'db'>,
  worldId: string,
): Promise<{ stored: number; recomputed: number; revisions: number }> {
  const [row] = await queryRows<{ stored: string; recomputed: string; revisions: string }>(
    node.db,
    `select w.stored_bytes::text as stored,
       (select coalesce(sum(octet_length(payload)), 0) from chunk_revisions where world_id = w.id)::text as recomputed,
       (select count(*) from chunk_revisions where world_id = w.id)::text as revisions
     from worlds w where w.id = ?`,
    [worldId],
  );
  return {
    stored: Number(row?.stored),
    recomputed: Number(row?.recomputed),
    revisions: Number(row?.revisions),
  };
}

/** The pruning passes (docs/worlds.md, "Retention") over the app's database, with these settings. */
export function retentionOf(app: Pick<App, 'ctx' | 'log'>, settings: RetentionSettings): HistoryRetention {
  return new HistoryRetention({
    data: () => app.ctx({ user: null, log: app.log, ip: 'internal' }).data,
    log: app.log,
    settings,
    intervalSeconds: 60,
  });
}
