import type { chunksBatch, chunksDelete, chunksPut } from '../../../protocol/chunks.js';
import type { InputOf } from '../../../protocol/operation.js';
import type { Ctx } from '../../platform/context.js';
import { binaryBatch, type ChunksService, type Precondition, preconditionFrom } from './chunks.service.js';

/**
 * The chunk writes as their declared operations: the socket's frames serve them, and the REST
 * routes (plain routes: codec bytes and If-Match headers) turn a request into the same input and
 * call them with the operations' hooks around, so an extension sees one input on both transports.
 *
 * `headerOnly` is a REST precondition no field can say (If-Match: * or a weak tag): it applies
 * when the input names no expected_revision, so a hook that sets one makes the write conditional on it.
 */
export function chunkOperations(chunks: ChunksService) {
  return {
    put: (ctx: Ctx, input: InputOf<typeof chunksPut>, headerOnly?: Precondition) =>
      chunks.write(ctx, input.world_id, {
        roomId: input.room_id,
        key: { x: input.x, y: input.y, z: input.z },
        payload: input.payload,
        precondition: preconditionFrom(input.expected_revision) ?? headerOnly,
      }),
    delete: (ctx: Ctx, input: InputOf<typeof chunksDelete>, headerOnly?: Precondition) =>
      chunks.write(ctx, input.world_id, {
        roomId: input.room_id,
        key: { x: input.x, y: input.y, z: input.z },
        payload: null,
        precondition: preconditionFrom(input.expected_revision) ?? headerOnly,
      }),
    batch: (ctx: Ctx, { world_id, ...body }: InputOf<typeof chunksBatch>) => {
      const batch = binaryBatch(body);
      return chunks.commit(ctx, {
        worldId: world_id,
        writes: batch.writes,
        expectedContentRevision: batch.expected,
      });
    },
  };
}

export type ChunkOperations = ReturnType<typeof chunkOperations>;
