import type { DiscoveryCategory, DiscoverySort, WorldDiscovery } from '../../../protocol/discovery.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { cursorField, cursorKey, decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { WorldsApi } from '../worlds/index.js';
import { type DiscoveryRow, discoveryOf, updateDiscovery } from './discovery.repository.js';
import type { DiscoveryJobs } from './discovery-jobs.js';
import {
  latestSnapshot,
  newestPage,
  type RankedRow,
  rankedPage,
  type SearchFilters,
  snapshotExists,
} from './discovery-search.repository.js';

const isRankKey = cursorKey(cursorField.time, cursorField.integer, cursorField.time, cursorField.id);

const toDiscovery = (row: DiscoveryRow): WorldDiscovery => ({
  world_id: row.world_id,
  owner_id: row.owner_id,
  title: row.title,
  description: row.description,
  tags: row.tags,
  category: row.category,
  thumbnail_asset_id: row.thumbnail_asset_id,
  visit_count: Number(row.visit_count),
  unique_visitors: Number(row.unique_visitors),
  last_visited_at: row.last_visited_at === null ? null : new Date(row.last_visited_at).toISOString(),
  created_at: new Date(row.world_created_at).toISOString(),
  updated_at: new Date(row.updated_at).toISOString(),
});

const noSuchWorld = () => new AppError(ErrorCode.NOT_FOUND, 'No such world.');

type Search = SearchFilters & { sort: DiscoverySort; limit: number; cursor?: string | undefined };

/** Discovery metadata and search (docs/discovery.md). */
export class DiscoveryService {
  constructor(
    private readonly deps: { worlds: Pick<WorldsApi, 'readable'>; jobs: Pick<DiscoveryJobs, 'rank'> },
  ) {}

  /** Whoever may read the world reads what search shows of it. */
  async get(ctx: Ctx, worldId: string): Promise<WorldDiscovery> {
    const world = await this.deps.worlds.readable(ctx, worldId);
    const row = await discoveryOf(ctx.data, world.id);
    if (!row) throw noSuchWorld();
    return toDiscovery(row);
  }

  /** The owner sets it; another reader is refused with 403, a non-reader with 404. */
  async put(
    ctx: Ctx,
    worldId: string,
    input: {
      title?: string | undefined;
      description?: string | undefined;
      tags?: string[] | undefined;
      category?: DiscoveryCategory | undefined;
      thumbnail_asset_id?: string | null | undefined;
    },
  ): Promise<WorldDiscovery> {
    const world = await this.deps.worlds.readable(ctx, worldId);
    if (world.ownerId !== callerOf(ctx).id)
      throw new AppError(ErrorCode.FORBIDDEN, "Only the world's owner sets what search shows of it.");
    const row = await updateDiscovery(ctx.data, world.id, {
      title: input.title,
      description: input.description,
      tags: input.tags === undefined ? undefined : [...new Set(input.tags)],
      category: input.category,
      thumbnail: input.thumbnail_asset_id === undefined ? undefined : { id: input.thumbnail_asset_id },
      at: ctx.now(),
    });
    if (!row) throw noSuchWorld();
    return toDiscovery(row);
  }

  async search(ctx: Ctx, input: Search) {
    const filters: SearchFilters = { q: input.q, tags: input.tags, category: input.category };
    if (input.sort === 'new') {
      const before = decodeCursor(input.cursor, isTimeIdKey);
      const rows = await newestPage(ctx.data, filters, { before, limit: input.limit + 1 });
      return pageFrom(rows, input.limit, toDiscovery, (row) => [row.created_key, row.world_id]);
    }
    const key = decodeCursor(input.cursor, isRankKey);
    const snapshot = key ? await this.keptSnapshot(ctx, key[0]) : await this.currentSnapshot(ctx);
    if (!snapshot) return { items: [], next_cursor: null };
    const rows = await rankedPage(ctx.data, input.sort, filters, {
      snapshot,
      after: key ? [key[1], key[2], key[3]] : undefined,
      limit: input.limit + 1,
    });
    return pageFrom(rows, input.limit, toDiscovery, (row: RankedRow) => [
      snapshot,
      Number(row.score),
      row.created_key,
      row.world_id,
    ]);
  }

  /** The newest snapshot; one is taken now when there is none yet (a new installation). */
  private async currentSnapshot(ctx: Ctx): Promise<string | undefined> {
    const latest = await latestSnapshot(ctx.data);
    if (latest) return latest;
    await this.deps.jobs.rank();
    return latestSnapshot(ctx.data);
  }

  private async keptSnapshot(ctx: Ctx, snapshot: string): Promise<string> {
    if (await snapshotExists(ctx.data, snapshot)) return snapshot;
    throw new AppError(
      ErrorCode.CONFLICT,
      'The ranking this cursor pages through is no longer kept; start again from the first page.',
    );
  }
}
