import { Encoder } from '@msgpack/msgpack';
import {
  chunksBatch,
  chunksDelete,
  chunksPut,
  chunksSubscribe,
  chunksUnsubscribe,
} from '../../../protocol/chunks.js';
import { CloseCode, type EventFrame } from '../../../protocol/frames.js';
import { chunksLoad } from '../../../protocol/room-content.js';
import { AppError, ErrorCode, type Wording } from '../../platform/errors.js';
import type { Connection } from '../../platform/gateway/connection.js';
import { canonicalId } from '../../platform/ids.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import type { ChunkOperations } from './chunk-operations.js';
import type { ChunkStreams } from './chunk-streams.js';
import type { ContentRefusal } from './chunks.service.js';
import type { RoomContent, RoomContentService } from './room-content.service.js';
import { streamPosition } from './worlds.repository.js';
import type { WorldsService } from './worlds.service.js';

/**
 * The worlds' frames whose REST twin is a plain route or that only the socket has: chunk writes,
 * room loads and the streams of a world's commits. Each binds a frame to the service behind it;
 * what it needs of the socket (its subscriptions, paced pages) is here, the rules are in the
 * services.
 */

interface WorldsFramesDeps {
  worlds: WorldsService;
  chunkWrites: ChunkOperations;
  roomContent: RoomContentService;
  streams: ChunkStreams;
  /** Paced pages wait for the client to read its buffer below this many bytes. */
  drainBelow: number;
}

/**
 * The content refusals in a frame's words: a write's precondition is its expected_revision, and
 * the request's fields sit under `d`. REST's words are in chunks.routes.ts.
 */
export const frameWording: Wording = (error, reason) => {
  const refusal = reason as ContentRefusal;
  switch (refusal.kind) {
    case 'expected_revision_missing':
      return refusal.write === undefined
        ? error.reworded(
            'A chunk write needs expected_revision: the revision it replaces, or null to create it.',
          )
        : error;
    case 'chunk_absent':
      return error.reworded('The chunk does not exist; write it with expected_revision null.');
    case 'payload_refused':
    case 'chunk_repeated':
    case 'target_after_content':
      return error.under('d.');
    default:
      return error;
  }
};
/** The wordings of the chunk writes' bindings: their REST twins are plain routes, worded there. */
const inFrames = { frame: frameWording };

const encoder = new Encoder();

/**
 * A room load over the socket: one `chunks.page` frame per page, encoded once and sent paced. After
 * each page it waits until the client has read its buffer down to `drainBelow` before reading the
 * next, so a slow reader holds the load instead of growing the server's memory; a closed
 * connection ends it. The caller's ack (`{content_revision, count}`) follows the last page on the
 * same socket.
 */
async function sendRoomContent(
  connection: Connection,
  requestId: number,
  content: RoomContent,
  drainBelow: number,
): Promise<{ content_revision: number; count: number }> {
  for await (const chunks of content.pages()) {
    const frame: EventFrame<'chunks.page'> = { t: 'chunks.page', d: { request_id: requestId, chunks } };
    const sent = connection.sendPaced(encoder.encode(frame));
    // uWS drops a frame only past its ceiling, far above paced pages; a client that still missed
    // one must not get an ack saying the load is complete.
    if (sent === 'dropped') connection.close(CloseCode.SLOW_CONSUMER, 'slow consumer');
    if (sent !== 'sent') break;
    await connection.drained(drainBelow);
    if (connection.closed) break;
  }
  return { content_revision: content.contentRevision, count: content.count };
}

export function worldsFrames({
  worlds,
  chunkWrites,
  roomContent,
  streams,
  drainBelow,
}: WorldsFramesDeps): OperationBinding[] {
  return [
    serve(chunksLoad, async (ctx, { world_id, room_id }, connection, requestId) => {
      if (requestId === undefined)
        throw new AppError(
          ErrorCode.VALIDATION_FAILED,
          'chunks.load needs a request id: its pages carry it.',
          {
            errors: [{ path: 'id', message: 'is required' }],
          },
        );
      return sendRoomContent(
        connection,
        requestId,
        await roomContent.load(ctx, world_id, room_id),
        drainBelow,
      );
    }),
    serve(chunksPut, (ctx, input) => chunkWrites.put(ctx, input), inFrames),
    serve(chunksDelete, (ctx, input) => chunkWrites.delete(ctx, input), inFrames),
    serve(chunksBatch, chunkWrites.batch, inFrames),
    serve(chunksSubscribe, async (ctx, { world_id, room_id }, connection) => {
      const { world, room } = room_id
        ? await worlds.readableRoom(ctx, world_id, room_id)
        : { world: await worlds.readable(ctx, world_id), room: undefined };
      const contentRevision = await streams.subscribe(connection, world, room?.id ?? null, () =>
        streamPosition(ctx.data, world.id),
      );
      return { world_id: world.id, room_id: room?.id ?? null, content_revision: contentRevision };
    }),
    // Streams are kept under canonical ids (as the database spells them), so match them that way.
    serve(chunksUnsubscribe, (_ctx, { world_id, room_id }, connection) => {
      streams.unsubscribe(connection, canonicalId(world_id), room_id ? canonicalId(room_id) : null);
      return {};
    }),
  ];
}
