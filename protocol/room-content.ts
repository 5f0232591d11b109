import { z } from 'zod';
import { operation } from './operation.js';

/**
 * Loading a room: every chunk it holds as of one content revision, with raw codec bytes
 * (msgpack bin), streamed in pages (docs/worlds.md#loading-a-room).
 *
 * - REST `GET /api/worlds/{world_id}/rooms/{room_id}/content` answers `application/msgpack`: one
 *   map `{content_revision, count, chunks: [RoomChunk, ...]}` written page by page.
 * - The frame `chunks.load` sends `chunks.page` frames (ChunksPage), then its ack
 *   `{content_revision, count}`. Module handlers do not see the frame id, so the client names the
 *   load with `request_id` and each page echoes it.
 */

const id = z.string().max(64);

/** One chunk of a loaded room, in (x, y, z) order. */
export interface RoomChunk {
  x: number;
  y: number;
  z: number;
  /** The revision the bytes are: the chunk's newest one at or below `content_revision`. */
  revision: number;
  /** The codec bytes (protocol/chunk-codec.md), a msgpack bin. */
  payload: Uint8Array;
}

/** The `d` of a `chunks.page` server frame: one page of a `chunks.load`. */
export interface ChunksPage {
  request_id: number;
  chunks: RoomChunk[];
}

export const roomContentSummarySchema = z.object({
  /** The world's content revision the chunks were read as of. */
  content_revision: z.number().int(),
  /** How many chunks the load holds: the pages' sum, the REST array's length. */
  count: z.number().int(),
});

export const chunksLoad = operation('chunks.load', {
  tag: 'worlds',
  summary:
    'Every chunk of a room as of the current content revision: chunks.page frames of {x, y, z, revision, payload} (bytes), then the ack {content_revision, count}.',
  frame: true,
  restRoute: {
    method: 'GET',
    path: '/api/worlds/:world_id/rooms/:room_id/content',
    operationId: 'rooms.content',
  },
  request: z
    .object({
      world_id: id,
      room_id: id,
      // The range of a frame id (frames.ts REQUEST_ID_MAX, not imported: frames.ts imports this file).
      request_id: z
        .number()
        .int()
        .min(0)
        .max(2 ** 32 - 1),
    })
    .strict(),
  response: roomContentSummarySchema,
  errors: [401, 404],
});

export const roomContentOperations = [chunksLoad] as const;
