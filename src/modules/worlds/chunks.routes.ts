import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  ChunkCodecError,
  ChunkValueError,
  chunkFromJson,
  chunkToJson,
  decodeChunk,
  encodeChunk,
  MAX_CHUNK_BYTES,
} from '../../../protocol/chunk-codec.js';
import { chunkJsonViewSchema, chunksDelete, chunksPut } from '../../../protocol/chunks.js';
import { withInternalTwin } from '../../../protocol/internal.js';
import type { InputOf, Operation } from '../../../protocol/operation.js';
import { chunkCoordinate } from '../../../protocol/worlds.js';
import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode, type Wording, worded } from '../../platform/errors.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses, hookedResponses } from '../../platform/http-schemas.js';
import { bytesOf, DOCUMENTED_BODIES, mediaResponse } from '../../platform/openapi.js';
import type { OperationHooks } from '../../platform/operation-hooks.js';
import type { ChunkOperations } from './chunk-operations.js';
import type { ChunksService, ContentRefusal, Precondition } from './chunks.service.js';

/**
 * Single chunks over REST. Their bodies are codec bytes (`application/octet-stream`) or the JSON
 * view, and their preconditions are HTTP headers (ETag, If-Match, If-None-Match), so these are
 * plain routes rather than JSON operations; the service behind them is the one the socket uses.
 */

const params = z.object({
  world_id: z.string().max(64),
  room_id: z.string().max(64),
  x: chunkCoordinate,
  y: chunkCoordinate,
  z: chunkCoordinate,
});
type Params = z.infer<typeof params>;

const chunkBytes = bytesOf('application/octet-stream', 'The codec bytes (protocol/chunk-codec.md).');
const writeResult = z.object({ revision: z.number().int(), content_revision: z.number().int() });
type WriteResult = z.infer<typeof writeResult>;
/** PUT's input; DELETE's is the same without a payload. */
type ChunkWriteInput = InputOf<typeof chunksPut>;
const PATH = '/api/worlds/:world_id/rooms/:room_id/chunks/:x/:y/:z';
/** The JSON view of a 1 MiB chunk is a few times larger than its bytes. */
const JSON_BODY_LIMIT = 8 * MAX_CHUNK_BYTES;

const etag = (revision: number) => `"${revision}"`;
const ETAG_VALUE = /^(W\/)?"(\d{1,15})"$|^(\d{1,15})$/;

/** The write's precondition from If-Match / If-None-Match; undefined when the client sent neither. */
export function preconditionOf(headers: FastifyRequest['headers']): Precondition | undefined {
  const ifMatch = headers['if-match']?.trim();
  const ifNoneMatch = headers['if-none-match']?.trim();
  const refuse = (path: string, message: string) =>
    new AppError(ErrorCode.VALIDATION_FAILED, `${path}: ${message}`, { errors: [{ path, message }] });
  if (ifMatch !== undefined && ifNoneMatch !== undefined)
    throw refuse('if-match', 'send either If-Match or If-None-Match, not both');
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch !== '*') throw refuse('if-none-match', 'only * is meaningful on a write');
    return { absent: true };
  }
  if (ifMatch === undefined) return undefined;
  if (ifMatch === '*') return { live: true };
  const match = ETAG_VALUE.exec(ifMatch);
  if (!match) throw refuse('if-match', 'must be * or one revision as an ETag, e.g. "42"');
  // If-Match compares strongly (RFC 9110, 13.1.1): a weak tag never matches, whatever it names.
  if (match[1]) return { never: true };
  return { revision: Number(match[2] ?? match[3]) };
}

/** The precondition as an operation's expected_revision; undefined for none and for one no revision says. */
function expectedRevisionOf(precondition: Precondition | undefined): number | null | undefined {
  if (precondition === undefined) return undefined;
  if ('revision' in precondition) return precondition.revision;
  return 'absent' in precondition ? null : undefined;
}

/**
 * The content refusals in REST's words: a single write's precondition is an If-Match or
 * If-None-Match header, and the fields of a batch or a rollback sit under `body`. The frames'
 * words are in worlds.frames.ts.
 */
export const restWording: Wording = (error, reason) => {
  const refusal = reason as ContentRefusal;
  switch (refusal.kind) {
    case 'expected_revision_missing':
      return refusal.write === undefined
        ? error.reworded(
            'A chunk write needs If-Match with the revision it replaces, or If-None-Match: * to create it.',
          )
        : error;
    case 'chunk_absent':
      return error.reworded('The chunk does not exist; write it with If-None-Match: *.');
    case 'payload_refused':
      // A single write's body is the payload itself.
      return refusal.write === undefined ? error : error.under('body.');
    case 'chunk_repeated':
    case 'target_after_content':
      return error.under('body.');
    default:
      return error;
  }
};

/**
 * The JSON view of stored codec bytes. Bytes stored before a rule of the codec tightened (strings
 * with U+0000 were accepted once) no longer decode: they answer 422 INVALID_CHUNK with the offset,
 * like a write of them would, and stay readable as bytes.
 */
function jsonViewOf(payload: Uint8Array) {
  try {
    return chunkToJson(decodeChunk(payload));
  } catch (error) {
    if (!(error instanceof ChunkCodecError)) throw error;
    throw new AppError(
      ErrorCode.INVALID_CHUNK,
      `The stored chunk has no JSON view under the codec's current rules (${error.message}); read it as application/octet-stream.`,
      { details: { offset: error.offset } },
    );
  }
}

const wantsJson = (request: FastifyRequest) =>
  (request.query as { format?: string }).format === 'json' ||
  /\bapplication\/json\b/.test(request.headers.accept ?? '');

/** The codec bytes of a PUT body: raw bytes as sent, or the JSON view encoded here. */
function payloadOf(body: unknown): Uint8Array {
  if (body instanceof Uint8Array) return body;
  try {
    return encodeChunk(chunkFromJson(body));
  } catch (error) {
    if (!(error instanceof ChunkValueError)) throw error;
    throw new AppError(ErrorCode.VALIDATION_FAILED, `The chunk is not valid: ${error.message}`, {
      errors: [{ path: error.path, message: error.message }],
    });
  }
}

export function registerChunkRoutes(
  http: HttpServer,
  chunks: ChunksService,
  operations: ChunkOperations,
  hooks: OperationHooks,
  ctxOf: (r: FastifyRequest) => Ctx,
) {
  // The writes are the socket's operations, with their hooks around them (chunk-operations.ts).
  const put = hooks.around(chunksPut, operations.put);
  const remove = hooks.around(chunksDelete, operations.delete);
  const hooked = (op: Operation) => (hooks.get(op.name) ? hookedResponses() : {});
  http.register(async (scope) => {
    scope.addContentTypeParser(
      'application/octet-stream',
      { parseAs: 'buffer', bodyLimit: MAX_CHUNK_BYTES },
      (_request, body, done) => done(null, body),
    );
    const key = (p: Params) => ({ x: p.x, y: p.y, z: p.z });
    /**
     * PUT and DELETE as their operations' input: the headers' precondition is checked before the
     * body is looked at, and one no field can say is passed beside the input.
     */
    const write = async (
      request: FastifyRequest,
      run: (ctx: Ctx, input: ChunkWriteInput, headerOnly?: Precondition) => Promise<WriteResult>,
      payloadOfBody?: () => Uint8Array,
    ) => {
      const { world_id, room_id, x, y, z } = request.params as Params;
      const precondition = preconditionOf(request.headers);
      const expected = expectedRevisionOf(precondition);
      const input = {
        world_id,
        room_id,
        x,
        y,
        z,
        ...(payloadOfBody ? { payload: payloadOfBody() } : {}),
        ...(expected === undefined ? {} : { expected_revision: expected }),
      } as ChunkWriteInput;
      try {
        return await run(ctxOf(request), input, expected === undefined ? precondition : undefined);
      } catch (error) {
        throw worded(error, restWording);
      }
    };

    // The users' route and the game servers' read-only twin (/internal, server token) are one handler.
    for (const twin of withInternalTwin(
      { path: PATH, operationId: 'chunks.get', tag: 'worlds' },
      { operationId: 'internal.chunks.get' },
    )) {
      scope.get(
        twin.path,
        {
          config: { serviceToken: twin.gameServer },
          schema: {
            operationId: twin.operationId,
            tags: [twin.tag],
            summary:
              'A chunk: its codec bytes (application/octet-stream) with ETag "<revision>", or the JSON view with Accept: application/json or ?format=json. If-None-Match with the current ETag answers 304.',
            params,
            querystring: z.object({ format: z.enum(['json', 'binary']).optional() }).strict(),
            response: {
              200: mediaResponse('The chunk, as its codec bytes or its JSON view.', {
                'application/octet-stream': chunkBytes,
                'application/json': chunkJsonViewSchema,
              }),
              304: z.null().describe('The chunk is still at the revision If-None-Match names.'),
              ...errorResponses(...(twin.gameServer ? [403] : []), 404, 422),
            },
          },
        },
        async (request: FastifyRequest, reply: FastifyReply) => {
          const p = request.params as Params;
          const chunk = await chunks.read(ctxOf(request), p.world_id, p.room_id, key(p));
          reply.header('etag', etag(chunk.revision)).header('cache-control', 'private, no-cache');
          if (request.headers['if-none-match'] === etag(chunk.revision)) return reply.code(304).send();
          if (wantsJson(request)) return reply.type('application/json').send(jsonViewOf(chunk.payload));
          return reply
            .type('application/octet-stream')
            .send(Buffer.from(chunk.payload.buffer, chunk.payload.byteOffset, chunk.payload.byteLength));
        },
      );
    }

    scope.put(
      PATH,
      {
        bodyLimit: JSON_BODY_LIMIT,
        schema: {
          operationId: 'chunks.put',
          tags: ['worlds'],
          summary: `Write a chunk: codec bytes (application/octet-stream, at most ${MAX_CHUNK_BYTES} bytes) or the JSON view (application/json). Needs If-Match: "<revision>" (or *) to replace, If-None-Match: * to create; a stale one answers 409 REVISION_CONFLICT with current_revision.`,
          params,
          [DOCUMENTED_BODIES]: {
            'application/octet-stream': chunkBytes,
            'application/json': chunkJsonViewSchema,
          },
          response: {
            200: writeResult,
            ...errorResponses(403, 404, 409, 422, 428),
            ...hooked(chunksPut),
          },
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const result = await write(request, put, () => payloadOf(request.body));
        reply.header('etag', etag(result.revision));
        return result;
      },
    );

    scope.delete(
      PATH,
      {
        schema: {
          operationId: 'chunks.delete',
          tags: ['worlds'],
          summary:
            'Delete a chunk by appending a tombstone revision. Needs If-Match: "<revision>" (or *); a stale one answers 409 REVISION_CONFLICT.',
          params,
          response: {
            200: writeResult,
            ...errorResponses(403, 404, 409, 422, 428),
            ...hooked(chunksDelete),
          },
        },
      },
      (request: FastifyRequest) => write(request, remove),
    );
  });
}
