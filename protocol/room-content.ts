import { z } from 'zod';
import { operation } from './operation.js';

/**
 * Loading a room: every chunk it holds as of one content revision, with raw codec bytes
 * (msgpack bin), streamed in pages (docs/worlds.md#loading-a-room).
 *
 * - REST `GET /api/worlds/{world_id}/rooms/{room_id}/content` answers `application/msgpack`: one
 *   map `{content_revision, count, chunks: [RoomChunk, ...]}` written page by page.
 * - The frame `chunks.load` (which needs a request id) sends `chunks.page` frames (ChunksPage)
 *   carrying that id as `request_id`, then its ack `{content_revision, count}`.
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
  /** The id of the chunks.load frame this page answers. */
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
  request: z.object({ world_id: id, room_id: id }).strict(),
  response: roomContentSummarySchema,
  errors: [401, 404],
});

export const roomContentOperations = [chunksLoad] as const;
