import type { z } from 'zod';
import { ChunkCodecError, decodeChunk, MAX_CHUNK_BYTES } from '../../../protocol/chunk-codec.js';
import type { binaryBatchSchema } from '../../../protocol/chunks.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { quotaExceeded } from '../../platform/quota.js';
import type { ChunkStreams } from './chunk-streams.js';
import {
  type ChunkKey,
  type HeadState,
  livePayload,
  prepareCommit,
  type RevisionWrite,
  writeCommit,
} from './chunks.repository.js';
import type { WorldsService } from './worlds.service.js';

/**
 * What a write expects the chunk to be: `revision` its current revision (a tombstone's revision
 * too, to write over a deletion), `absent` that it does not exist or is deleted, `live` that it
 * exists; `never` holds for no chunk. The adapters say how their requests name each (REST's
 * If-Match and If-None-Match, chunks.routes.ts; the protocol's expected_revision, preconditionFrom).
 */
export type Precondition = { revision: number } | { absent: true } | { live: true } | { never: true };

/** One write of a commit: codec bytes, or null to delete (a tombstone revision). */
export interface PlannedWrite {
  roomId: string;
  key: ChunkKey;
  payload: Uint8Array | null;
  /** May be left out only when the commit names the content revision it expects. */
  precondition: Precondition | undefined;
}

export interface CommitRequest {
  worldId: string;
  writes: readonly PlannedWrite[];
  /** The whole commit applies only if the world is still at this content revision. */
  expectedContentRevision?: number | undefined;
}

/**
 * Why a write or a rollback was refused, where the words depend on the transport: each adapter
 * words it (REST in chunks.routes.ts, frames in worlds.frames.ts). `write` is the write's place
 * in a batch, undefined for a single write; the errors' own paths are relative to the request
 * (`writes.3.payload`, `revision`).
 */
export type ContentRefusal =
  /** The write names no expected revision, and its commit no expected content revision. */
  | { kind: 'expected_revision_missing'; write: number | undefined }
  /** The write expected a chunk at some revision, and there is none (or it is deleted). */
  | { kind: 'chunk_absent' }
  /** The write's payload is over the size limit or does not decode. */
  | { kind: 'payload_refused'; write: number | undefined }
  /** The write writes the same chunk as an earlier write of its batch. */
  | { kind: 'chunk_repeated'; write: number }
  /** The rollback's target revision is after the world's content revision. */
  | { kind: 'target_after_content'; contentRevision: number };

/** A batch as the writes of one commit, and the content revision it expects, if it names one. */
export interface BatchWrites {
  expected: number | undefined;
  writes: PlannedWrite[];
}

/** What a write's expected_revision means as a precondition (null: the chunk must not exist). */
export function preconditionFrom(expected: number | null | undefined): Precondition | undefined {
  if (expected === undefined) return undefined;
  return expected === null ? { absent: true } : { revision: expected };
}

/** Where a write of the protocol goes: its room and its chunk's key. */
export const addressOf = (write: { room_id: string; x: number; y: number; z: number }) => ({
  roomId: write.room_id,
  key: { x: write.x, y: write.y, z: write.z },
});

/** A msgpack batch (REST `application/msgpack` or the socket's chunks.batch frame) as one commit's writes. */
export function binaryBatch(batch: z.infer<typeof binaryBatchSchema>): BatchWrites {
  return {
    expected: batch.expected_content_revision,
    writes: batch.writes.map((write) => ({
      ...addressOf(write),
      payload: write.delete ? null : (write.payload ?? null),
      precondition: preconditionFrom(write.expected_revision),
    })),
  };
}

export interface CommitResult {
  content_revision: number;
  revisions: number[];
}

const chunkNotFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such chunk.');
const roomNotFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such room in this world.');
export const staleWorld = (current: number, expected: number) =>
  new AppError(
    ErrorCode.REVISION_CONFLICT,
    `The world is at content revision ${current}; reload and write again.`,
    {
      details: { content_revision: current, expected_content_revision: expected },
    },
  );

interface Committed {
  worldId: string;
  revisions: number[];
  contentRevision: number;
  seq: number;
}

/** Names the failing write of a batch in an error's details. */
const about = (error: AppError, index: number | undefined) => {
  if (index !== undefined) error.extra.details = { ...error.extra.details, index };
  return error;
};

/** Checks a payload against the codec and the size limit; the error names the byte offset. */
export function checkPayload(payload: Uint8Array, path = 'payload'): void {
  if (payload.byteLength > MAX_CHUNK_BYTES)
    throw new AppError(ErrorCode.PAYLOAD_TOO_LARGE, `A chunk payload is at most ${MAX_CHUNK_BYTES} bytes.`, {
      errors: [{ path, message: `is ${payload.byteLength} bytes` }],
    });
  try {
    decodeChunk(payload);
  } catch (error) {
    if (!(error instanceof ChunkCodecError)) throw error;
    throw new AppError(ErrorCode.INVALID_CHUNK, `The chunk payload does not decode: ${error.message}`, {
      errors: [{ path, message: error.message }],
      details: { offset: error.offset },
    });
  }
}

function conflict(head: HeadState | undefined, contentRevision: number): AppError {
  return new AppError(
    ErrorCode.REVISION_CONFLICT,
    head
      ? `The chunk is at revision ${head.revision}${head.deleted ? ' (deleted)' : ''}; reload it and write again.`
      : 'The chunk does not exist; write it expecting no chunk.',
    {
      details: {
        current_revision: head?.revision ?? null,
        current_deleted: head ? head.deleted : true,
        content_revision: contentRevision,
      },
      ...(head ? {} : { reason: { kind: 'chunk_absent' } satisfies ContentRefusal }),
    },
  );
}

/** Whether the chunk's head is what the write expected. */
function holds(precondition: Precondition, head: HeadState | undefined): boolean {
  if ('never' in precondition) return false;
  if ('revision' in precondition) return head?.revision === precondition.revision;
  const live = head !== undefined && !head.deleted;
  return 'live' in precondition ? live : !live;
}

/** Reading and writing single chunks, with optimistic concurrency on every write. */
export class ChunksService {
  constructor(
    private readonly worlds: WorldsService,
    private readonly streams: ChunkStreams,
    /** MAX_WORLD_CONTENT_BYTES: the payload bytes a world may store, live and kept history. */
    private readonly maxContentBytes: number,
  ) {}

  /** A live chunk's payload and revision, in a world the caller may read. */
  async read(
    ctx: Ctx,
    worldId: string,
    roomId: string,
    key: ChunkKey,
  ): Promise<{ revision: number; payload: Uint8Array }> {
    const { room } = await this.worlds.readableRoom(ctx, worldId, roomId);
    const chunk = await livePayload(ctx.data, room.id, key);
    if (!chunk) throw chunkNotFound();
    return chunk;
  }

  /**
   * Commits writes to one world all or nothing, appending a revision per write, if every chunk's
   * head is what its precondition says (and the world is at the expected content revision).
   * Writes to one world take turns on the world's row lock, so the checks and the appends are one
   * step: a stale writer gets 409 with the current revision, never a lost update. The commit is
   * streamed to subscribers once it is durable.
   */
  commit(ctx: Ctx, request: CommitRequest): Promise<CommitResult> {
    return this.commitWrites(ctx, request, false);
  }

  /** A commit; a single write's errors name no write of a batch (no `index`, no `writes.N` paths). */
  private async commitWrites(ctx: Ctx, request: CommitRequest, single: boolean): Promise<CommitResult> {
    const caller = callerOf(ctx);
    const { expectedContentRevision } = request;
    // Rooms are matched as the database spells their ids.
    const writes = request.writes.map((write) => ({ ...write, roomId: canonicalId(write.roomId) }));
    const at = (i: number) => (single ? undefined : i);
    writes.forEach((write, i) => {
      if (!write.precondition && expectedContentRevision === undefined)
        throw about(
          new AppError(
            ErrorCode.PRECONDITION_REQUIRED,
            single
              ? 'A chunk write needs the revision it expects to replace, or to expect no chunk to create it.'
              : 'Each write needs expected_revision (null to create), unless the batch sets expected_content_revision.',
            { reason: { kind: 'expected_revision_missing', write: at(i) } satisfies ContentRefusal },
          ),
          at(i),
        );
      if (write.payload) {
        try {
          checkPayload(write.payload, single ? 'payload' : `writes.${i}.payload`);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          error.extra.reason = { kind: 'payload_refused', write: at(i) } satisfies ContentRefusal;
          throw about(error, at(i));
        }
      }
    });
    if (!single) refuseRepeats(writes);
    const malformedRoom = writes.findIndex((w) => !isId(w.roomId));
    if (malformedRoom >= 0) throw about(roomNotFound(), at(malformedRoom));
    const now = ctx.now();
    const committed = await transaction(ctx.data, async (tx) => {
      const world = await this.worlds.owned(ctx, request.worldId, tx, true);
      const plan = await prepareCommit(tx, world.id, [...new Set(writes.map((w) => w.roomId))], writes);
      const missingRoom = writes.findIndex((w) => !plan.rooms.has(w.roomId));
      if (missingRoom >= 0) throw about(roomNotFound(), at(missingRoom));
      if (expectedContentRevision !== undefined && expectedContentRevision !== world.contentRevision)
        throw staleWorld(world.contentRevision, expectedContentRevision);
      writes.forEach((write, i) => {
        const head = plan.heads[i];
        if (write.payload === null && (!head || head.deleted)) throw about(chunkNotFound(), at(i));
        if (write.precondition && !holds(write.precondition, head))
          throw about(conflict(head, world.contentRevision), at(i));
      });
      // Every new payload counts whole: what it supersedes (or deletes) stays as history.
      const addedBytes = writes.reduce((sum, write) => sum + (write.payload?.byteLength ?? 0), 0);
      refuseOverQuota(plan.storedBytes, addedBytes, this.maxContentBytes);
      return this.append(tx, world.id, caller.id, writes, plan.revisions, now, addedBytes);
    });
    await this.publish(committed, caller.id, writes);
    return { content_revision: committed.contentRevision, revisions: committed.revisions };
  }

  /** Appends the revisions and records the commit in the world's row; the caller holds the world's lock. */
  private async append(
    data: DataAccess,
    worldId: string,
    authorId: string,
    writes: readonly RevisionWrite[],
    revisions: number[],
    now: Date,
    addedBytes: number,
  ): Promise<Committed> {
    const seq = await writeCommit(data, { worldId, authorId, now, writes, revisions, addedBytes });
    return { worldId, revisions, contentRevision: Math.max(...revisions), seq };
  }

  /** Streams a commit once it is durable. */
  private publish(committed: Committed, authorId: string, writes: readonly RevisionWrite[]): Promise<void> {
    return this.streams.publishCommit(committed.seq, {
      world_id: committed.worldId,
      content_revision: committed.contentRevision,
      author_id: authorId,
      revisions: writes.map((write, i) => ({
        room_id: write.roomId,
        ...write.key,
        revision: committed.revisions[i] as number,
        deleted: write.payload === null,
        payload: write.payload,
      })),
    });
  }

  /** One chunk: a commit of one write, answered with its revision. */
  async write(
    ctx: Ctx,
    worldId: string,
    write: PlannedWrite,
  ): Promise<{ revision: number; content_revision: number }> {
    const result = await this.commitWrites(ctx, { worldId, writes: [write] }, true);
    return { revision: result.revisions[0] as number, content_revision: result.content_revision };
  }
}

/**
 * Refuses a commit that would take the payload bytes the world stores, live and kept history,
 * over the limit. A commit that adds no bytes (deletes: tombstones weigh nothing) always passes,
 * so a world at or over its limit can still delete, and gets the bytes back once retention
 * prunes what it deleted (docs/worlds.md, "Stored content bytes").
 */
export function refuseOverQuota(storedBytes: number, addedBytes: number, limit: number): void {
  if (addedBytes > 0 && storedBytes + addedBytes > limit)
    throw quotaExceeded(
      `A world stores at most ${limit} bytes of chunk payloads, its live chunks' and the history it keeps; it stores ${storedBytes} and this would add ${addedBytes}.`,
      limit,
    );
}

const REPEATED = 'writes the same chunk as an earlier write';

/** A batch writes each chunk at most once: two writes to one chunk would race inside the batch. */
function refuseRepeats(writes: readonly PlannedWrite[]): void {
  const seen = new Set<string>();
  writes.forEach((write, i) => {
    const key = `${write.roomId}/${write.key.x}/${write.key.y}/${write.key.z}`;
    if (!seen.has(key)) {
      seen.add(key);
      return;
    }
    const path = `writes.${i}`;
    throw new AppError(ErrorCode.VALIDATION_FAILED, `${path}: ${REPEATED}`, {
      errors: [{ path, message: REPEATED }],
      reason: { kind: 'chunk_repeated', write: i } satisfies ContentRefusal,
    });
  });
}
