import { setImmediate } from 'node:timers/promises';
import { type Ctx, callerOf } from '../../platform/context.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { AuditApi } from '../audit/index.js';
import type { ChunkStreams } from './chunk-streams.js';
import { type ContentRefusal, refuseOverQuota, staleWorld } from './chunks.service.js';
import { finishRollback, restorePage, rollbackBounds } from './rollback.repository.js';
import type { WorldsService } from './worlds.service.js';

/** The field error names the request's `revision`; each transport says where that field is. */
const afterContentRevision = (contentRevision: number) =>
  new AppError(ErrorCode.VALIDATION_FAILED, `revision: the world is at ${contentRevision}`, {
    errors: [{ path: 'revision', message: `is after the content revision ${contentRevision}` }],
    reason: { kind: 'target_after_content', contentRevision } satisfies ContentRefusal,
  });

/** The revisions a rollback to `target` would copy may have been pruned: the horizon says how far back it can go. */
const beforeHorizon = (target: number, horizon: number) =>
  new AppError(
    ErrorCode.CONFLICT,
    `Revision ${target} is before the world's history horizon ${horizon}: roll back to ${horizon} or later, or to 0.`,
    { details: { horizon } },
  );

/**
 * Rolling a world back (docs/worlds.md, "Rollback"). The database copies the payloads, in pages of
 * bounded size within one transaction that holds the world's lock throughout: the revision ids
 * drawn page after page still increase in commit order within the world, and the commit is all
 * or nothing. The service only counts.
 */
export class RollbackService {
  constructor(
    private readonly worlds: WorldsService,
    private readonly streams: ChunkStreams,
    /** MAX_WORLD_CONTENT_BYTES: the payload bytes a world may store, live and kept history. */
    private readonly maxContentBytes: number,
    /** An admin's rollback of someone else's world is recorded in the audit log, in its transaction. */
    private readonly audit: Pick<AuditApi, 'record'>,
  ) {}

  /**
   * Restores every chunk of the world as it was at `target` by appending revisions (chunks deleted
   * since come back, chunks created since become tombstones); history is never rewritten. Target
   * 0 is the empty world, always reachable; any other target must be a revision of this world no
   * older than its history horizon. The owner rolls back; an admin rolls back any world, and
   * that is recorded in the audit log when the world is someone else's.
   */
  async rollback(
    ctx: Ctx,
    worldId: string,
    target: number,
    expectedContentRevision?: number,
  ): Promise<{ content_revision: number; restored: number }> {
    const caller = callerOf(ctx);
    const now = ctx.now();
    const outcome = await transaction(ctx.data, async (tx) => {
      const world = await this.worlds.owned(ctx, worldId, tx, true, true);
      if (expectedContentRevision !== undefined && expectedContentRevision !== world.contentRevision)
        throw staleWorld(world.contentRevision, expectedContentRevision);
      if (target > world.contentRevision) throw afterContentRevision(world.contentRevision);
      const bounds = await rollbackBounds(tx, world.id, target);
      if (target !== 0 && target < bounds.horizon) throw beforeHorizon(target, bounds.horizon);
      if (target !== 0 && !bounds.targetExists)
        throw new AppError(ErrorCode.NOT_FOUND, `Revision ${target} is not a revision of this world.`);

      let restored = 0;
      let addedBytes = 0;
      let contentRevision = world.contentRevision;
      const rooms = new Set<string>();
      for (let afterChunk = 0, more = true; more; ) {
        const page = await restorePage(tx, {
          worldId: world.id,
          target,
          afterChunk,
          authorId: caller.id,
          now,
        });
        restored += page.restored;
        addedBytes += page.addedBytes;
        // Bytes only add up (the revisions superseded stay as history): a rollback over the
        // limit is refused at the page that takes it there, not after copying the rest.
        refuseOverQuota(bounds.storedBytes, addedBytes, this.maxContentBytes);
        contentRevision = Math.max(contentRevision, page.lastRevision);
        for (const room of page.rooms) rooms.add(room);
        ({ more, lastChunk: afterChunk } = page);
        // PGlite runs in this process and answers without an I/O wait, so the pages would follow
        // each other without the event loop ever polling: let the requests that came meanwhile
        // (a liveness probe) be served between pages.
        await setImmediate();
      }
      if (world.ownerId !== caller.id)
        await this.audit.record(tx, {
          actor: { kind: 'user', id: caller.id },
          action: 'worlds.rollback',
          target: { type: 'world', id: world.id },
          before: { content_revision: world.contentRevision, owner_id: world.ownerId },
          after: { content_revision: contentRevision, revision: target, restored },
        });
      if (restored === 0) return { worldId: world.id, restored, contentRevision, seq: undefined, rooms };
      const seq = await finishRollback(tx, { worldId: world.id, contentRevision, addedBytes, now });
      return { worldId: world.id, restored, contentRevision, seq, rooms };
    });
    if (outcome.seq !== undefined)
      await this.streams.publishRollback(outcome.seq, {
        world_id: outcome.worldId,
        content_revision: outcome.contentRevision,
        author_id: caller.id,
        rooms: [...outcome.rooms],
      });
    return { content_revision: outcome.contentRevision, restored: outcome.restored };
  }
}
