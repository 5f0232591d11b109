import type { Revision } from '../../../protocol/worlds.js';
import type { Ctx } from '../../platform/context.js';
import { cursorField, cursorKey, decodeCursor, pageFrom } from '../../platform/cursor.js';
import { IsolationLevel, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { ChunkKey } from './chunks.repository.js';
import {
  type HistoryScope,
  historyHorizon,
  planForValues,
  type RevisionRow,
  revisionsPage,
} from './history.repository.js';
import type { WorldsService } from './worlds.service.js';

export interface HistoryQuery {
  limit: number;
  cursor?: string | undefined;
  since?: number | undefined;
  room_id?: string | undefined;
  x?: number | undefined;
  y?: number | undefined;
  z?: number | undefined;
}

export interface HistoryPage {
  items: Revision[];
  next_cursor: string | null;
  content_revision: number;
  horizon: number;
}

const isRevisionKey = cursorKey(cursorField.positive);

const revisionView = (row: RevisionRow): Revision => ({
  revision: row.id,
  room_id: row.roomId,
  x: row.x,
  y: row.y,
  z: row.z,
  deleted: row.deleted,
  size: row.size,
  author_id: row.authorId,
  created_at: row.createdAt.toISOString(),
});

/** The chunk the query names, if any: room_id, x, y and z name one together. */
function chunkOf(query: HistoryQuery): ChunkKey | undefined {
  const { room_id, x, y, z } = query;
  if (x === undefined && y === undefined && z === undefined) return undefined;
  if (room_id !== undefined && x !== undefined && y !== undefined && z !== undefined) return { x, y, z };
  const errors = Object.entries({ room_id, x, y, z })
    .filter(([, value]) => value === undefined)
    .map(([path]) => ({ path, message: 'is required: room_id, x, y and z name a chunk together' }));
  throw new AppError(ErrorCode.VALIDATION_FAILED, 'A chunk is named by room_id, x, y and z together.', {
    errors,
  });
}

/** The revision history of a world's content (docs/worlds.md, "Revision history"). */
export class HistoryService {
  constructor(private readonly worlds: WorldsService) {}

  /**
   * One page, newest first, of a world the caller may read (moderators and admins: any world). keyset on the revision id. Ids increase in commit order within a
   * world, so a later page (older ids) can miss nothing committed meanwhile; what was committed
   * since the first page is newer than it, and `since` fetches it.
   */
  async list(ctx: Ctx, worldId: string, query: HistoryQuery): Promise<HistoryPage> {
    const before = decodeCursor(query.cursor, isRevisionKey)?.[0];
    const key = chunkOf(query);
    // One snapshot for the page and content_revision, so a client that resumes with
    // since=content_revision neither misses nor repeats a revision.
    return transaction(
      ctx.data,
      async (tx) => {
        await planForValues(tx);
        const world = await this.worlds.reviewable(ctx, worldId, tx);
        let scope: HistoryScope = { worldId: world.id };
        if (query.room_id !== undefined) {
          const room = await this.worlds.roomIn(tx, world, query.room_id);
          scope = { roomId: room.id, key };
        }
        const rows = await revisionsPage(tx, scope, {
          // Nothing of the world is newer than its content revision: bounding the first page there
          // spares an index walk the other worlds' newer revisions.
          before: before ?? world.contentRevision + 1,
          after: query.since,
          limit: query.limit + 1,
        });
        return {
          ...pageFrom(rows, query.limit, revisionView, (row) => [row.id]),
          content_revision: world.contentRevision,
          horizon: await historyHorizon(tx, world.id),
        };
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
  }
}
