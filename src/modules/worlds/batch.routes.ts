import { Decoder } from '@msgpack/msgpack';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  ChunkValueError,
  chunkFromJson,
  encodeChunk,
  MAX_CHUNK_BYTES,
} from '../../../protocol/chunk-codec.js';
import {
  batchResultSchema,
  binaryBatchSchema,
  chunksBatch,
  jsonBatchSchema,
  MAX_BATCH_WRITES,
} from '../../../protocol/chunks.js';
import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode, worded } from '../../platform/errors.js';
import { MsgpackBounds } from '../../platform/gateway/msgpack-bounds.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses, hookedResponses } from '../../platform/http-schemas.js';
import { DOCUMENTED_BODIES } from '../../platform/openapi.js';
import type { OperationHooks } from '../../platform/operation-hooks.js';
import type { ChunkOperations } from './chunk-operations.js';
import { restWording } from './chunks.routes.js';

/**
 * POST /api/worlds/{world_id}/chunks/batch: JSON with base64 payloads (or JSON-view chunks), or
 * `application/msgpack` with raw bin payloads. Both are validated here against the protocol's
 * schemas and become the same commit the socket's chunks.batch frame makes.
 */

/** A full batch of 1 MiB chunks is too much for one request; this bounds the bytes read. */
const MSGPACK_BODY_LIMIT = 32 * MAX_CHUNK_BYTES;
/** Base64 and the JSON view take more room than the bytes they carry. */
const JSON_BODY_LIMIT = 48 * MAX_CHUNK_BYTES;
/** A batch map, its writes array, a write, then a JSON-view chunk's own nesting. */
const MSGPACK_MAX_DEPTH = 24;

const bounds = new MsgpackBounds(MSGPACK_MAX_DEPTH);
// Bins are bounded by the body limit here; an oversized chunk is refused by the service (413 naming it).
const decoder = new Decoder({ maxArrayLength: MAX_BATCH_WRITES * 8 });

function decodeMsgpack(body: Buffer): unknown {
  const problem = bounds.check(body);
  if (problem)
    throw new AppError(
      ErrorCode.MALFORMED_REQUEST,
      `The body is not valid msgpack at byte ${problem.offset}: ${problem.reason}.`,
    );
  try {
    return decoder.decode(body);
  } catch {
    throw new AppError(ErrorCode.MALFORMED_REQUEST, 'The body is not valid msgpack.');
  }
}

const msgpackTooLarge = () =>
  new AppError(
    ErrorCode.PAYLOAD_TOO_LARGE,
    `A msgpack batch is at most ${MSGPACK_BODY_LIMIT} bytes; send fewer or smaller chunks per batch.`,
  );

const isMsgpack = (request: FastifyRequest) =>
  /^application\/msgpack\b/i.test(request.headers['content-type'] ?? '');

function validationFailed(error: z.ZodError): AppError {
  const errors = error.issues.map((issue) => ({
    path: ['body', ...issue.path].join('.'),
    message: issue.message,
  }));
  return new AppError(ErrorCode.VALIDATION_FAILED, 'The batch is invalid.', { errors });
}

/** The codec bytes of a JSON write: its base64 payload, or its JSON-view chunk encoded here. */
function jsonPayload(write: JsonBatch['writes'][number], index: number): Uint8Array | null {
  if (write.delete) return null;
  if (write.payload !== undefined) return Buffer.from(write.payload, 'base64');
  try {
    return encodeChunk(chunkFromJson(write.chunk));
  } catch (error) {
    if (!(error instanceof ChunkValueError)) throw error;
    const path = `body.writes.${index}.chunk.${error.path}`;
    throw new AppError(ErrorCode.VALIDATION_FAILED, `The chunk is not valid: ${error.message}`, {
      errors: [{ path, message: error.message }],
    });
  }
}

type JsonBatch = z.infer<typeof jsonBatchSchema>;
type BinaryBatch = z.infer<typeof binaryBatchSchema>;

/** A JSON batch as the operation's input: each payload as codec bytes, as msgpack and the socket carry it. */
function asBinaryBatch(batch: JsonBatch): BinaryBatch {
  return {
    ...(batch.expected_content_revision === undefined
      ? {}
      : { expected_content_revision: batch.expected_content_revision }),
    writes: batch.writes.map((write, i) => {
      const { payload: _base64, chunk: _view, ...rest } = write;
      const payload = jsonPayload(write, i);
      // The codec's bytes own their buffer, as the socket's copied bins do (chunkBytesSchema).
      return payload === null ? rest : { ...rest, payload: payload as Uint8Array<ArrayBuffer> };
    }),
  };
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw validationFailed(parsed.error);
  return parsed.data;
}

export function registerBatchRoute(
  http: HttpServer,
  operations: ChunkOperations,
  hooks: OperationHooks,
  ctxOf: (r: FastifyRequest) => Ctx,
) {
  // The socket's chunks.batch operation, with its hooks around it (chunk-operations.ts).
  const commit = hooks.around(chunksBatch, operations.batch);
  http.register(async (scope) => {
    // A batch is JSON or msgpack; other bodies answer 415.
    scope.removeContentTypeParser('text/plain');
    scope.addContentTypeParser(
      'application/msgpack',
      { parseAs: 'buffer', bodyLimit: MSGPACK_BODY_LIMIT },
      (_request, body, done) => {
        try {
          // A body sent without Content-Length (chunked) is only known once read.
          if ((body as Buffer).byteLength > MSGPACK_BODY_LIMIT) throw msgpackTooLarge();
          done(null, decodeMsgpack(body as Buffer));
        } catch (error) {
          done(error as Error, undefined);
        }
      },
    );
    scope.post(
      '/api/worlds/:world_id/chunks/batch',
      {
        // The route's limit is the larger, JSON's; it would override the msgpack parser's own, so a
        // msgpack body announcing more than its limit is refused here, before a byte is read.
        bodyLimit: JSON_BODY_LIMIT,
        preParsing: (request, _reply, payload, done) => {
          if (isMsgpack(request) && Number(request.headers['content-length']) > MSGPACK_BODY_LIMIT)
            done(msgpackTooLarge());
          else done(null, payload);
        },
        // The body is validated in the handler: one schema for JSON (base64), one for msgpack (bin).
        validatorCompiler: () => (value) => ({ value }),
        schema: {
          operationId: 'chunks.batch',
          tags: ['worlds'],
          summary: `Write up to ${MAX_BATCH_WRITES} chunks of one world all or nothing, in one transaction and one commit. JSON (payload as base64, or chunk as the JSON view) or application/msgpack (payload as raw bin). Each write names its expected_revision (null: the chunk must not exist), unless expected_content_revision guards the whole batch. A stale one answers 409 REVISION_CONFLICT with details.index and current_revision; nothing is written on any error.`,
          params: z.object({ world_id: z.string().max(64) }),
          [DOCUMENTED_BODIES]: {
            'application/json': jsonBatchSchema,
            'application/msgpack': binaryBatchSchema,
          },
          response: {
            200: batchResultSchema,
            ...errorResponses(403, 404, 409, 422, 428),
            ...(hooks.get(chunksBatch.name) ? hookedResponses() : {}),
          },
        },
      },
      async (request: FastifyRequest) => {
        const isJson = /^application\/json\b/i.test(request.headers['content-type'] ?? '');
        const batch = isJson
          ? asBinaryBatch(parse(jsonBatchSchema, request.body))
          : parse(binaryBatchSchema, request.body);
        const { world_id } = request.params as { world_id: string };
        try {
          return await commit(ctxOf(request), { world_id, ...batch });
        } catch (error) {
          throw worded(error, restWording);
        }
      },
    );
  });
}
