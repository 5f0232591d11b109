import { z } from 'zod';

/**
 * A place in an event stream (docs/recovery.md): every event pushed to the user's sockets, and
 * every message of a joined chat, carries one as `pos`. `offset` counts the stream's events;
 * `epoch` names the history the offsets belong to and changes when that history was lost.
 */
export const streamPositionSchema = z
  .object({
    offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    epoch: z.string().min(1).max(64),
  })
  .strict();
export type StreamPosition = z.infer<typeof streamPositionSchema>;
