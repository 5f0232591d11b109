import type { AdminWorld, World, WorldVisibility } from '../../../protocol/worlds.js';
import { type Ctx, requireRole } from '../../platform/context.js';
import { cursorField, cursorKey, decodeCursor, pageFrom } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { searchTerms } from '../../platform/name-search.js';
import type { AuditApi } from '../audit/index.js';
import { adminWorldsPage } from './worlds.repository.js';
import { type WorldsService, worldView } from './worlds.service.js';

const isWorldKey = cursorKey(cursorField.id);

/**
 * The administration of worlds (docs/worlds.md, "Administration"): the list of every world for
 * moderators and admins, and an admin's change of any world's visibility, recorded in the audit
 * log in the transaction of the change. The change itself is the owner's (WorldsService.change).
 */
export class WorldAdminService {
  constructor(
    private readonly worlds: WorldsService,
    private readonly audit: Pick<AuditApi, 'record'>,
  ) {}

  /** Every world whatever its visibility, newest first, or the one whose id `query` is: moderators and admins. */
  async list(
    ctx: Ctx,
    query: {
      query?: string | undefined;
      visibility?: WorldVisibility | undefined;
      owner_id?: string | undefined;
      limit: number;
      cursor?: string | undefined;
    },
  ): Promise<{ items: AdminWorld[]; next_cursor: string | null }> {
    requireRole(ctx, 'moderator', 'Only moderators and admins list every world.');
    if (query.owner_id !== undefined && !isId(query.owner_id))
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'owner_id: must be an account id', {
        errors: [{ path: 'owner_id', message: 'must be an account id' }],
      });
    const before = decodeCursor(query.cursor, isWorldKey);
    // As the accounts list does: a query that is an id finds that world, whatever its name.
    const text = query.query?.trim() ?? '';
    const rows = await adminWorldsPage(
      ctx.data,
      {
        ...(isId(text) ? { id: canonicalId(text) } : { search: searchTerms(text) }),
        visibility: query.visibility,
        ownerId: query.owner_id === undefined ? undefined : canonicalId(query.owner_id),
      },
      { beforeId: before?.[0], limit: query.limit + 1 },
    );
    return pageFrom(
      rows,
      query.limit,
      (row) => {
        const { rooms: _, ...world } = worldView(row, []);
        return { ...world, owner_username: row.ownerUsername };
      },
      (row) => [row.id],
    );
  }

  /** An admin sets any world's visibility; recorded in the audit log with the visibility before and after. */
  async setVisibility(ctx: Ctx, worldId: string, visibility: WorldVisibility): Promise<World> {
    const caller = requireRole(ctx, 'admin', 'Only admins change the visibility of any world.');
    const [before, updated] = await transaction(ctx.data, async (tx) => {
      const world = await this.worlds.owned(ctx, worldId, tx, true, true);
      const row = await this.worlds.change(tx, world.id, { visibility }, ctx.now());
      await this.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'worlds.visibility',
        target: { type: 'world', id: world.id },
        before: { visibility: world.visibility, owner_id: world.ownerId },
        after: { visibility: row.visibility, owner_id: row.ownerId },
      });
      return [world, row] as const;
    });
    return this.worlds.changed(ctx, before, updated);
  }
}
