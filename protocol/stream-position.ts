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

/**
 * The payload of `stream.reset`, pushed to an open socket when events of one of its recorded
 * streams were lost on their way to it (its node was cut off from Redis, and the history did not
 * have them all any more): refetch, as after `recovered: false`, and carry on from `position`.
 */
export interface StreamReset {
  /** The stream, as `pos` names it: absent for the user's own, `chat:...` or `group:...` otherwise. */
  stream?: string;
  /** Where the stream stands now; absent when the server could not read it. */
  position?: StreamPosition;
}

/** What `AtriumClient.onMissedEvents` listeners are told to refetch. */
export type MissedEvents =
  | { stream: 'user' }
  | { stream: 'chat'; world_id: string; room_id: string | null }
  | { stream: 'group'; group_id: string };

/** What to refetch for a `stream.reset` of `stream` (its `pos` name: none for the user's own). */
export function missedIn(stream: string | undefined): MissedEvents {
  const [kind, id = '', room] = stream?.split(':') ?? [];
  if (kind === 'group') return { stream: 'group', group_id: id };
  if (kind === 'chat') return { stream: 'chat', world_id: id, room_id: room ?? null };
  return { stream: 'user' };
}
