import type { Ctx } from '../../platform/context.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { RankIndex } from './rank-index.js';
import { cursorOf, keyOfCursor, type RankKey } from './rank-key.js';
import {
  countBefore,
  countRecords,
  keyOfRow,
  keysFromPosition,
  type RecordRow,
  recordsAfter,
  recordsOfUsers,
  type StandingsPeriod,
} from './records.repository.js';

/** What a records list reads: the contract's selectors (one at most) and paging. */
export interface RecordsQuery {
  limit: number;
  cursor?: string;
  around_user_id?: string;
  around?: 'me';
  user_ids?: string;
  friends?: 'true';
}

/** A record as the API shows it, before the standings' own id field is added. */
export interface RankedRecord {
  user_id: string;
  username: string;
  score: number;
  subscore: number;
  num_submissions: number;
  rank: number;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export type FriendsPage = (
  data: DataAccess,
  period: StandingsPeriod,
  userId: string,
  after: RankKey | undefined,
  limit: number,
) => Promise<RecordRow[]>;

/** Where ranks come from: the rank index when it is ready, else SQL over the records alone. */
interface Positions {
  count(): Promise<number>;
  position(key: RankKey): Promise<number>;
  keysFrom(start: number, count: number): Promise<RankKey[]>;
  keysAfter(key: RankKey | undefined, count: number): Promise<RankKey[]>;
}

const MAX_USER_IDS = 100;

const refuse = (path: string, message: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, `${path}: ${message}`, { errors: [{ path, message }] });

/** Records at consecutive positions from `start` (0-based), those deleted meanwhile left out. */
const ranked = (rows: readonly (RecordRow | undefined)[], start: number) =>
  rows.flatMap((row, i) => (row ? [rankedOf(row, start + i + 1)] : []));

export const rankedOf = (row: RecordRow, rank: number): RankedRecord => ({
  user_id: row.user_id,
  username: row.username,
  score: row.score,
  subscore: row.subscore,
  num_submissions: row.num_submissions,
  rank,
  metadata: row.metadata,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

/**
 * The reads of standings shared by boards and tournaments: pages from the top, around a user, of
 * some users and of a caller's friends, each with the exact rank of every record at the time of
 * the answer (docs/leaderboards.md, "Ranks").
 */
export class StandingsReader {
  constructor(
    private readonly index: RankIndex,
    private readonly friendsPage: FriendsPage,
  ) {}

  /** The 1-based rank of a record, exact now; the index is asked beside its ready check. */
  async rankOf(ctx: Ctx, period: StandingsPeriod, row: RecordRow): Promise<number> {
    const key = keyOfRow(row);
    const [isReady, fromIndex] = await Promise.all([
      this.index.ready(period),
      this.index.position(period, key).catch(() => undefined),
    ]);
    if (isReady && fromIndex !== undefined) return fromIndex + 1;
    return (await this.positionsOf(ctx, period, isReady).position(key)) + 1;
  }

  async page(
    ctx: Ctx,
    period: StandingsPeriod,
    query: RecordsQuery,
    callerId: string | null,
  ): Promise<{ items: RankedRecord[]; next_cursor: string | null }> {
    const selectors = (['around_user_id', 'around', 'user_ids', 'friends'] as const).filter(
      (field) => query[field] !== undefined,
    );
    if (selectors.length > 1) throw refuse(selectors[1] as string, `cannot be combined with ${selectors[0]}`);
    const selector = selectors[0];
    if (query.cursor !== undefined && selector !== undefined && selector !== 'friends')
      throw refuse('cursor', `cannot be combined with ${selector}`);
    const after = query.cursor === undefined ? undefined : keyOfCursor(query.cursor);
    if (query.cursor !== undefined && !after) throw refuse('cursor', 'is not a cursor of this list');
    if (callerId === null && (selector === 'around' || selector === 'friends'))
      throw refuse(selector, 'names the caller, and this read has none');
    // The index's ready check goes out beside each path's first read (one Redis write with
    // auto-pipelining, one stage less to wait for); an index read the check refuses is dropped.
    const ready = this.index.ready(period);

    if (selector === 'user_ids') {
      const positions = this.positionsOf(ctx, period, await ready);
      return { items: await this.ofUsers(ctx, period, positions, query), next_cursor: null };
    }
    if (selector === 'friends') {
      const [isReady, rows] = await Promise.all([
        ready,
        this.friendsPage(ctx.data, period, callerId as string, after, query.limit + 1),
      ]);
      const positions = this.positionsOf(ctx, period, isReady);
      const page = rows.slice(0, query.limit);
      const items = await Promise.all(
        page.map(async (row) => rankedOf(row, (await positions.position(keyOfRow(row))) + 1)),
      );
      return {
        items,
        next_cursor: rows.length > query.limit ? cursorOf(keyOfRow(page.at(-1) as RecordRow)) : null,
      };
    }
    if (selector !== undefined) {
      const target = selector === 'around' ? (callerId as string) : (query.around_user_id as string);
      const [isReady, row] = await Promise.all([ready, this.recordOf(ctx, period, target)]);
      const positions = this.positionsOf(ctx, period, isReady);
      if (row) return this.around(ctx, period, positions, row, query.limit);
      // No record: the top page is answered instead.
      return this.fromKeys(ctx, period, positions, await positions.keysAfter(undefined, query.limit + 1), {
        limit: query.limit,
        fromTop: true,
      });
    }
    const fromIndex = this.index.keysAfter(period, after, query.limit + 1).catch(() => undefined);
    const [isReady, indexKeys] = await Promise.all([ready, fromIndex]);
    const positions = this.positionsOf(ctx, period, isReady);
    const keys = isReady && indexKeys ? indexKeys : await positions.keysAfter(after, query.limit + 1);
    return this.fromKeys(ctx, period, positions, keys, { limit: query.limit, fromTop: after === undefined });
  }

  /** The user's record in the period, or undefined (none, or not an id). */
  private async recordOf(ctx: Ctx, period: StandingsPeriod, userId: string) {
    if (!isId(userId)) return undefined;
    const [row] = await recordsOfUsers(ctx.data, period, [canonicalId(userId)]);
    return row;
  }

  /** The page centred on the user's record. */
  private async around(
    ctx: Ctx,
    period: StandingsPeriod,
    positions: Positions,
    row: RecordRow,
    limit: number,
  ) {
    const [position, total] = await Promise.all([positions.position(keyOfRow(row)), positions.count()]);
    const start = Math.max(0, Math.min(position - Math.floor((limit - 1) / 2), total - limit));
    const keys = await positions.keysFrom(start, limit);
    const page = await this.rowsInOrder(ctx, period, keys);
    const more = start + keys.length < total;
    return {
      items: ranked(page, start),
      next_cursor: more && keys.length > 0 ? cursorOf(keys.at(-1) as RankKey) : null,
    };
  }

  private async ofUsers(ctx: Ctx, period: StandingsPeriod, positions: Positions, query: RecordsQuery) {
    const ids = [...new Set((query.user_ids as string).split(','))];
    if (ids.length > MAX_USER_IDS || ids.some((id) => id === ''))
      throw refuse('user_ids', `must be 1-${MAX_USER_IDS} comma-separated user ids`);
    const rows = await recordsOfUsers(ctx.data, period, ids.filter(isId).map(canonicalId));
    return Promise.all(rows.map(async (row) => rankedOf(row, (await positions.position(keyOfRow(row))) + 1)));
  }

  /**
   * A page from keys read with limit + 1: the first `limit` records with their ranks, and the
   * cursor after them. From the top (no cursor) the first key's position is 0, with no read.
   */
  private async fromKeys(
    ctx: Ctx,
    period: StandingsPeriod,
    positions: Positions,
    keys: RankKey[],
    { limit, fromTop }: { limit: number; fromTop: boolean },
  ) {
    const page = keys.slice(0, limit);
    if (page.length === 0) return { items: [], next_cursor: null };
    const [first, rows] = await Promise.all([
      fromTop ? 0 : positions.position(page[0] as RankKey),
      this.rowsInOrder(ctx, period, page),
    ]);
    return {
      items: ranked(rows, first),
      next_cursor: keys.length > limit ? cursorOf(page.at(-1) as RankKey) : null,
    };
  }

  /**
   * The records of `keys`, in their order. A record that changed since its key was read is shown
   * as it is now, at the rank its key had; one deleted meanwhile is undefined (left out).
   */
  private async rowsInOrder(ctx: Ctx, period: StandingsPeriod, keys: readonly RankKey[]) {
    const rows = await recordsOfUsers(
      ctx.data,
      period,
      keys.map((key) => key.userId),
    );
    const byUser = new Map(rows.map((row) => [row.user_id, row]));
    return keys.map((key) => byUser.get(key.userId));
  }

  /** The index's positions when it is ready, else SQL's over the records alone. */
  private positionsOf(ctx: Ctx, period: StandingsPeriod, ready: boolean): Positions {
    const index = this.index;
    if (ready) {
      return {
        count: () => index.count(period),
        position: (key) => index.position(period, key),
        keysFrom: (start, count) => index.keysFrom(period, start, count),
        keysAfter: (key, count) => index.keysAfter(period, key, count),
      };
    }
    const data = ctx.data;
    return {
      count: () => countRecords(data, period),
      position: (key) => countBefore(data, period, key),
      keysFrom: (start, count) => keysFromPosition(data, period, start, count),
      keysAfter: async (key, count) => (await recordsAfter(data, period, key, count)).map(keyOfRow),
    };
  }
}
