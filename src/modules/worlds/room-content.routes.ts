import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { Encoder } from '@msgpack/msgpack';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { INTERNAL_ROOM_CHUNKS_PATH, withInternalTwin } from '../../../protocol/internal.js';
import type { InputOf, PlainRestTwin } from '../../../protocol/operation.js';
import { chunksLoad, roomContentSummarySchema } from '../../../protocol/room-content.js';
import type { Ctx } from '../../platform/context.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses, hookedResponses } from '../../platform/http-schemas.js';
import { bytesOf, mediaResponse } from '../../platform/openapi.js';
import type { OperationHooks } from '../../platform/operation-hooks.js';
import type { RoomContent, RoomContentService } from './room-content.service.js';

/**
 * A room load over REST. It writes pages as the service reads them, so memory holds a page or two
 * whatever the room's size: a stream that reads at most a page ahead of what the response took.
 * The socket's twin, paced by the client's buffer, is in worlds.frames.ts.
 */

const encoder = new Encoder();

/** Declared on the frame, so the route and the catalogue cannot disagree. */
const { path, operationId } = chunksLoad.restRoute as PlainRestTwin;
const params = z.object({ world_id: z.string().max(64), room_id: z.string().max(64) });
type Params = z.infer<typeof params>;

/** A msgpack array header for `length` elements (the elements follow it, encoded one by one). */
function arrayHeader(length: number): Buffer {
  if (length < 16) return Buffer.of(0x90 | length);
  if (length < 0x10000) return Buffer.of(0xdc, length >> 8, length & 0xff);
  const header = Buffer.alloc(5);
  header[0] = 0xdd;
  header.writeUInt32BE(length, 1);
  return header;
}

/**
 * The answer as one msgpack map, `{content_revision, count, chunks: [...]}`: the head with the
 * array's length first, then each page's elements. An error after the head (the room was deleted)
 * ends the stream with it, and Fastify destroys the response rather than finishing a document that
 * would lie.
 */
async function* documentOf(content: RoomContent): AsyncGenerator<Buffer> {
  yield Buffer.concat([
    Buffer.of(0x83), // a map of three entries
    encoder.encode('content_revision'),
    encoder.encode(content.contentRevision),
    encoder.encode('count'),
    encoder.encode(content.count),
    encoder.encode('chunks'),
    arrayHeader(content.count),
  ]);
  for await (const page of content.pages()) yield Buffer.concat(page.map((chunk) => encoder.encode(chunk)));
}

/** The msgpack document the REST route streams, as its decoded value. */
const roomContentDocument = roomContentSummarySchema.extend({
  chunks: z.array(
    z.object({
      x: z.number().int(),
      y: z.number().int(),
      z: z.number().int(),
      revision: z.number().int(),
      payload: bytesOf(
        'application/octet-stream',
        'The codec bytes (protocol/chunk-codec.md), a msgpack bin.',
      ),
    }),
  ),
});

/** The users' route, and the game servers' read-only twin under /internal (server token). */
export function registerRoomContentRoute(
  http: HttpServer,
  content: RoomContentService,
  hooks: OperationHooks,
  ctxOf: (r: FastifyRequest) => Ctx,
) {
  /**
   * The socket's chunks.load with its hooks around: the before hook sees `{world_id, room_id}` and
   * the after hook the summary the frame's ack carries, once the whole document was sent.
   */
  const load = hooks.around(
    chunksLoad,
    async (ctx: Ctx, input: InputOf<typeof chunksLoad>, reply: FastifyReply) => {
      const loaded = await content.load(ctx, input.world_id, input.room_id);
      reply
        .type('application/msgpack')
        .header('cache-control', 'private, no-cache')
        .send(Readable.from(documentOf(loaded), { objectMode: false }));
      await finished(reply.raw);
      return { content_revision: loaded.contentRevision, count: loaded.count };
    },
  );
  for (const twin of withInternalTwin(
    { path, operationId, tag: 'worlds' },
    { operationId: 'internal.chunks.load', path: INTERNAL_ROOM_CHUNKS_PATH },
  )) {
    http.get(
      twin.path,
      {
        config: { serviceToken: twin.gameServer },
        schema: {
          operationId: twin.operationId,
          tags: [twin.tag],
          summary:
            'Every chunk of a room as of the current content revision, as application/msgpack: one map {content_revision, count, chunks: [{x, y, z, revision, payload}]} with payload the codec bytes (bin), in (x, y, z) order, streamed page by page. If the room is deleted meanwhile the response is cut off (an error, never a short document).',
          params,
          response: {
            200: mediaResponse('The room as one msgpack map, decoded as this schema describes.', {
              'application/msgpack': roomContentDocument,
            }),
            ...errorResponses(...(twin.gameServer ? [403] : []), 404),
            ...(hooks.get(chunksLoad.name) ? hookedResponses() : {}),
          },
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const { world_id, room_id } = request.params as Params;
        try {
          await load(ctxOf(request), { world_id, room_id }, reply);
        } catch (error) {
          // A document cut off after its head was already ended by Fastify, which logged why.
          if (!reply.sent) throw error;
        }
        return reply;
      },
    );
  }
}
