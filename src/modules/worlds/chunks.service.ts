import { ChunkCodecError, decodeChunk, MAX_CHUNK_BYTES } from '../../../protocol/chunk-codec.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import {
  appendRevision,
  type ChunkKey,
  type HeadState,
  headAt,
  livePayload,
  setContentRevision,
} from './chunks.repository.js';
import type { WorldsService } from './worlds.service.js';

/**
 * What a write expects the chunk to be: `revision` its current revision (If-Match; a tombstone's
 * revision too, to write over a deletion), `absent` that it does not exist or is deleted
 * (If-None-Match: *), `live` that it exists (If-Match: *).
 */
export type Precondition = { revision: number } | { absent: true } | { live: true };

export interface ChunkWrite {
  worldId: string;
  roomId: string;
  key: ChunkKey;
  /** Codec bytes, or null to delete (a tombstone revision). */
  payload: Uint8Array | null;
  precondition: Precondition | undefined;
}

const chunkNotFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such chunk.');

/** Checks a payload against the codec and the size limit; the error names the byte offset. */
export function checkPayload(payload: Uint8Array, path = 'payload'): void {
  if (payload.byteLength > MAX_CHUNK_BYTES)
    throw new AppError(ErrorCode.PAYLOAD_TOO_LARGE, `A chunk payload is at most ${MAX_CHUNK_BYTES} bytes.`);
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
      : 'The chunk does not exist; write it with If-None-Match: *.',
    {
      details: {
        current_revision: head?.revision ?? null,
        current_deleted: head ? head.deleted : true,
        content_revision: contentRevision,
      },
    },
  );
}

/** Whether the chunk's head is what the write expected. */
function holds(precondition: Precondition, head: HeadState | undefined): boolean {
  if ('revision' in precondition) return head?.revision === precondition.revision;
  const live = head !== undefined && !head.deleted;
  return 'live' in precondition ? live : !live;
}

/** Reading and writing single chunks, with optimistic concurrency on every write. */
export class ChunksService {
  constructor(private readonly worlds: WorldsService) {}

  /** A live chunk's payload and revision, in a world the caller may read. */
  async read(
    ctx: Ctx,
    worldId: string,
    roomId: string,
    key: ChunkKey,
  ): Promise<{ revision: number; payload: Uint8Array }> {
    const { room } = await this.worlds.readableRoom(ctx, worldId, roomId);
    const chunk = await livePayload(ctx.em, room.id, key);
    if (!chunk) throw chunkNotFound();
    return chunk;
  }

  /**
   * Writes or deletes one chunk if its head is what the precondition says, appending a revision.
   * Writes to one world take turns on the world's row lock, so the check and the append are one
   * step and a stale writer gets 409 with the current revision, never a lost update.
   */
  async write(ctx: Ctx, write: ChunkWrite): Promise<{ revision: number; content_revision: number }> {
    const caller = callerOf(ctx);
    if (!write.precondition)
      throw new AppError(
        ErrorCode.PRECONDITION_REQUIRED,
        'A chunk write needs If-Match with the revision it replaces, or If-None-Match: * to create it.',
      );
    if (write.payload) checkPayload(write.payload);
    const precondition = write.precondition;
    const now = ctx.now();
    return ctx.em.transactional(async (em) => {
      const world = await this.worlds.owned(ctx, write.worldId, em, true);
      const room = await this.worlds.roomIn(em, world, write.roomId);
      const head = await headAt(em, room.id, write.key);
      if (write.payload === null && (!head || head.deleted)) throw chunkNotFound();
      if (!holds(precondition, head)) throw conflict(head, world.contentRevision);
      const revision = await appendRevision(em, {
        worldId: world.id,
        roomId: room.id,
        key: write.key,
        head,
        payload: write.payload,
        authorId: caller.id,
        now,
      });
      await setContentRevision(em, world.id, revision, now);
      return { revision, content_revision: revision };
    });
  }
}
