import type { RoomChunk } from '../../../protocol/room-content.js';
import type { Ctx } from '../../platform/context.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { ChunkKey } from './chunks.repository.js';
import { countAsOf, pageAsOf } from './room-content.repository.js';
import type { WorldsService } from './worlds.service.js';

/** A page holds at most this many chunks, or about this many payload bytes, whichever comes first. */
export const PAGE_CHUNKS = 256;
export const PAGE_BYTES = 512 * 1024;

/** A room's content as of one revision; the chunks come a page at a time (see `pages`). */
export interface RoomContent {
  contentRevision: number;
  count: number;
  /**
   * The chunks in (x, y, z) order, exactly `count` of them. Each page is its own short statement,
   * so no transaction (and, embedded, not the one connection) is held while a client reads.
   * Throws NOT_FOUND when the room was deleted before the last page was read.
   */
  pages(): AsyncGenerator<RoomChunk[]>;
}

const roomGone = () => new AppError(ErrorCode.NOT_FOUND, 'The room was deleted while it was being loaded.');

/** Bulk loads of a room (docs/worlds.md#loading-a-room); both transports stream `load`'s pages. */
export class RoomContentService {
  constructor(private readonly worlds: WorldsService) {}

  /** Checks access and reads the revision and count, so a refusal comes before any page. */
  async load(ctx: Ctx, worldId: string, roomId: string): Promise<RoomContent> {
    const { world, room } = await this.worlds.readableRoom(ctx, worldId, roomId);
    const asOf = world.contentRevision;
    const count = await countAsOf(ctx.data, room.id, asOf);
    return { contentRevision: asOf, count, pages: () => pagesOf(ctx.data, room.id, asOf, count) };
  }
}

async function* pagesOf(
  data: DataAccess,
  roomId: string,
  asOf: number,
  count: number,
): AsyncGenerator<RoomChunk[]> {
  let after: ChunkKey | undefined;
  // How many chunks the byte budget is likely to take, from the sizes seen so far: the page
  // statement looks up this many candidates, so large chunks do not cost 256 lookups a page.
  let expected = PAGE_CHUNKS;
  let sentBytes = 0;
  // Revisions <= asOf only go away with their room, so the count holds unless the room does; the
  // limit never reads past it, so the document's array length stays true.
  for (let sent = 0; sent < count; ) {
    const page = await pageAsOf(data, roomId, asOf, {
      after,
      limit: Math.min(expected, count - sent),
      maxBytes: PAGE_BYTES,
    });
    const last = page.at(-1);
    if (!last) throw roomGone();
    sent += page.length;
    for (const chunk of page) sentBytes += chunk.payload.byteLength;
    expected = Math.min(PAGE_CHUNKS, Math.ceil(PAGE_BYTES / Math.max(1, sentBytes / sent)) + 1);
    after = last;
    yield page;
  }
}
