import { z } from 'zod';
import { CHUNK_CODEC_VERSION, MAX_CHUNK_BYTES, MAX_CHUNK_OBJECTS } from './chunk-codec.js';
import { operation } from './operation.js';
import type { ChunksPage } from './room-content.js';
import { INT32 } from './worlds.js';

/**
 * Writing chunks in batches, and the live stream of a world's commits with its co-editing frames.
 * Every write names what it replaces (an expected revision), so two editors on two nodes get a
 * clean 409 REVISION_CONFLICT instead of a lost update. See docs/worlds.md.
 */

/** Writes in one batch: one transaction, one commit event. */
export const MAX_BATCH_WRITES = 500;
/** Streams (a world, or one of its rooms) a connection may follow at once. */
export const MAX_CHUNK_STREAMS_PER_CONNECTION = 64;

const id = z.string().max(64);
const coordinate = z.number().int().min(INT32.min).max(INT32.max);
const revision = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * What the write replaces: the chunk's current revision (a tombstone's too), or null when it must
 * not exist or be deleted (a create). Omitted, the write needs the batch's
 * `expected_content_revision`; a single write without either answers 428.
 */
export const expectedRevisionSchema = revision.nullable();

/**
 * Codec bytes as a msgpack bin. Copied while the frame is validated: the decoded bin is a view
 * into the socket's receive buffer, which is reused once the frame handler was called. Its size
 * is checked by the service (413 at most MAX_CHUNK_BYTES), as for every other way in.
 */
export const chunkBytesSchema = z.instanceof(Uint8Array).transform((bytes) => bytes.slice());

const address = { room_id: id, x: coordinate, y: coordinate, z: coordinate };

/** One write of a batch over msgpack (REST `application/msgpack` or the socket): raw bytes or a delete. */
export const binaryChunkWriteSchema = z
  .object({
    ...address,
    payload: chunkBytesSchema.optional(),
    delete: z.literal(true).optional(),
    expected_revision: expectedRevisionSchema.optional(),
  })
  .strict()
  .refine((w) => (w.payload === undefined) !== (w.delete === undefined), {
    message: 'a write has either payload or delete: true',
  });

/** One write of a JSON batch: base64 codec bytes, the chunk's JSON view, or a delete. */
export const jsonChunkWriteSchema = z
  .object({
    ...address,
    payload: z
      .base64()
      .max(Math.ceil(MAX_CHUNK_BYTES / 3) * 4)
      .optional(),
    chunk: z.unknown().optional().describe('The JSON view of the chunk, encoded by the server.'),
    delete: z.literal(true).optional(),
    expected_revision: expectedRevisionSchema.optional(),
  })
  .strict()
  .refine((w) => [w.payload, w.chunk, w.delete].filter((v) => v !== undefined).length === 1, {
    message: 'a write has exactly one of payload, chunk or delete: true',
  });

const batchFields = {
  /** The whole batch applies only if the world is still at this content revision. */
  expected_content_revision: revision.optional(),
};

export const jsonBatchSchema = z
  .object({ ...batchFields, writes: z.array(jsonChunkWriteSchema).min(1).max(MAX_BATCH_WRITES) })
  .strict();
export const binaryBatchSchema = z
  .object({ ...batchFields, writes: z.array(binaryChunkWriteSchema).min(1).max(MAX_BATCH_WRITES) })
  .strict();

const float32Json = z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]);

/**
 * The shape of a chunk's JSON view (protocol/chunk-codec.md): what a chunk GET answers as
 * application/json and what a chunk PUT reads. It documents the shape; the codec's own reader
 * (chunkFromJson) applies every rule of the format, byte limits included, and names the field.
 */
export const chunkJsonViewSchema = z
  .object({
    version: z.literal(CHUNK_CODEC_VERSION).optional(),
    objects: z
      .array(
        z
          .object({
            id: z.string(),
            asset_id: z.string(),
            position: z.tuple([float32Json, float32Json, float32Json]),
            rotation: z.tuple([float32Json, float32Json, float32Json, float32Json]),
            scale: z.tuple([float32Json, float32Json, float32Json]),
            props: z.record(z.string(), z.unknown()).optional(),
          })
          .strict(),
      )
      .max(MAX_CHUNK_OBJECTS),
  })
  .strict()
  .meta({ id: 'ChunkJsonView' });

export const writeResultSchema = z.object({ revision: z.number().int(), content_revision: z.number().int() });
export const batchResultSchema = z.object({
  content_revision: z.number().int(),
  /** The new revision of each write, in the order of `writes`. */
  revisions: z.array(z.number().int()),
});

const tag = 'worlds';
const CHUNK_PATH = '/api/worlds/:world_id/rooms/:room_id/chunks/:x/:y/:z';

export const chunksPut = operation('chunks.put', {
  tag,
  summary: 'Write a chunk from the socket (codec bytes); the twin of the REST PUT with If-Match.',
  frame: true,
  restRoute: { method: 'PUT', path: CHUNK_PATH, operationId: 'chunks.put' },
  request: z
    .object({
      world_id: id,
      ...address,
      payload: chunkBytesSchema,
      expected_revision: expectedRevisionSchema.optional(),
    })
    .strict(),
  response: writeResultSchema,
});

export const chunksDelete = operation('chunks.delete', {
  tag,
  summary: 'Delete a chunk (a tombstone revision) from the socket; the twin of the REST DELETE.',
  frame: true,
  restRoute: { method: 'DELETE', path: CHUNK_PATH, operationId: 'chunks.delete' },
  request: z
    .object({ world_id: id, ...address, expected_revision: expectedRevisionSchema.optional() })
    .strict(),
  response: writeResultSchema,
});

export const chunksBatch = operation('chunks.batch', {
  tag,
  summary: `Write up to ${MAX_BATCH_WRITES} chunks of a world all or nothing; the twin of POST /api/worlds/{world_id}/chunks/batch.`,
  frame: true,
  restRoute: { method: 'POST', path: '/api/worlds/:world_id/chunks/batch', operationId: 'chunks.batch' },
  request: binaryBatchSchema.extend({ world_id: id }),
  response: batchResultSchema,
});

export const worldsRollback = operation('worlds.rollback', {
  tag,
  summary:
    'Restore every chunk of the world as it was at `revision`, by appending revisions: chunks deleted since come back, chunks created since become tombstones, history stays. The owner, or an admin on any world (recorded in the audit log as `worlds.rollback` when the world is not theirs); `revision` is 0 (the empty world) or a revision of this world (404 otherwise), at most the content revision (422 beyond) and at least the history horizon (409 CONFLICT with `horizon` before it). A rollback that would take the stored content bytes of the world (live chunks plus kept history) over the limit answers 409 QUOTA_EXCEEDED with `limit`.',
  rest: { method: 'POST', path: '/api/worlds/:world_id/rollback' },
  request: z.object({ world_id: id, revision, expected_content_revision: revision.optional() }).strict(),
  response: z.object({
    content_revision: z.number().int(),
    /** How many chunks the rollback changed (one revision each). */
    restored: z.number().int(),
  }),
  errors: [401, 403, 404, 409, 422],
});

const eventsOnlyOnTheSocket =
  'a stream pushes commits as they happen, which only the socket can; REST readers page GET /api/worlds/{world_id}/revisions';

export const chunksSubscribe = operation('chunks.subscribe', {
  tag,
  summary:
    "Follow a world's commits (or one room's): the ack carries the content revision the stream starts after; every later commit arrives as a chunks.commit event, in commit order.",
  frame: true,
  setup: 'database',
  socketOnly: eventsOnlyOnTheSocket,
  // A game server follows its own world's commits over a socket authenticated with its token.
  gameServer: true,
  request: z.object({ world_id: id, room_id: id.optional() }).strict(),
  response: z.object({
    world_id: z.string(),
    room_id: z.string().nullable(),
    content_revision: z.number().int(),
  }),
});

export const chunksUnsubscribe = operation('chunks.unsubscribe', {
  tag,
  summary: 'Stop following a world (without room_id: the whole-world stream) or one of its rooms.',
  frame: true,
  socketOnly: eventsOnlyOnTheSocket,
  gameServer: true,
  request: z.object({ world_id: id, room_id: id.optional() }).strict(),
  response: z.object({}),
});

export const chunkOperations = [
  worldsRollback,
  chunksPut,
  chunksDelete,
  chunksBatch,
  chunksSubscribe,
  chunksUnsubscribe,
] as const;

/** One committed revision as a stream delivers it. */
export interface StreamedRevision {
  room_id: string;
  x: number;
  y: number;
  z: number;
  revision: number;
  deleted: boolean;
  /** The codec bytes; null for a tombstone. */
  payload: Uint8Array | null;
}

/** `chunks.commit`: one committed write or batch (only the subscribed room's revisions). */
export interface ChunksCommitEvent {
  world_id: string;
  /** The world's content revision after this commit. */
  content_revision: number;
  author_id: string | null;
  revisions: StreamedRevision[];
}

/**
 * `chunks.resync`: revisions after `from_revision` were not delivered (the client read too slowly,
 * a commit was too large to stream or was a rollback, `large_commit`, or one was lost between nodes). Reload what changed since
 * (GET /api/worlds/{world_id}/revisions?since=, or the room's content) and keep applying events.
 */
export interface ChunksResyncEvent {
  world_id: string;
  from_revision: number;
  reason: 'slow_consumer' | 'large_commit' | 'missed_commit';
}

/** `chunks.room_deleted`: the room and its chunks are gone; the content revision may go down. */
export interface ChunksRoomDeletedEvent {
  world_id: string;
  room_id: string;
  content_revision: number;
}

/** `chunks.stream_ended`: the stream stopped (the world was deleted, or the caller may no longer read it). */
export interface ChunksStreamEndedEvent {
  world_id: string;
  reason: 'world_deleted' | 'access_revoked';
}

/** The world content stream's events, by server frame type (docs/worlds.md). */
export interface ChunkEventPayloads {
  'chunks.page': ChunksPage;
  'chunks.commit': ChunksCommitEvent;
  'chunks.resync': ChunksResyncEvent;
  'chunks.room_deleted': ChunksRoomDeletedEvent;
  'chunks.stream_ended': ChunksStreamEndedEvent;
}
