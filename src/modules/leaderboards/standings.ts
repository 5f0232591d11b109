import type { Ctx } from '../../platform/context.js';
import { timeOfKey } from '../../platform/cursor.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { windowStart } from '../../platform/kv/kv.js';
import {
  type FriendsPage,
  type Guarded,
  guardedRecordsAfter,
  guardedRecordsOfUsers,
} from './guarded.repository.js';
import type { RankIndex, Window } from './rank-index.js';
import { cursorOf, keyOfCursor, type RankKey } from './rank-key.js';
import {
  countBefore,
  countRecords,
  keyOfRow,
  keysFromPosition,
  type RecordRow,
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

/** A record as the API shows it, with its standings' id field (`leaderboard_id`, `tournament_id`) first. */
interface RankedRecord {
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

/**
 * The standings a read was asked for are gone: their board or tournament was deleted (on any node)
 * since the service read it. Its service answers as if it had read that first.
 */
export class StandingsGone extends Error {
  constructor() {
    super('the standings were deleted');
  }
}

/** A guarded statement's answer, or StandingsGone. */
function present<T>(answer: Guarded<T> | undefined): Guarded<T> {
  if (!answer) throw new StandingsGone();
  return answer;
}

/** Where ranks come from: the rank index when it is ready, else SQL over the records alone. */
interface Positions {
  position(key: RankKey): Promise<number>;
}

const MAX_USER_IDS = 100;

/** A marker read that lets the index answer nothing and starts no rebuild (RankIndex.readyAt). */
const NO_INDEX: Promise<undefined> = Promise.resolve(undefined);

const refuse = (path: string, message: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, `${path}: ${message}`, { errors: [{ path, message }] });

/**
 * Builds a record's answer at its rank, its standings' id field included: one object per record,
 * written out field by field for boards and for tournaments rather than spread from a shared one.
 */
export type RecordView<T> = (row: RecordRow, rank: number) => T;

export const boardRecordView =
  (leaderboardId: string): RecordView<RankedRecord & { leaderboard_id: string }> =>
  (row, rank) => ({
    leaderboard_id: leaderboardId,
    user_id: row.user_id,
    username: row.username,
    score: row.score,
    subscore: row.subscore,
    num_submissions: row.num_submissions,
    rank,
    metadata: row.metadata,
    created_at: timeOfKey(row.created_key),
    updated_at: timeOfKey(row.updated_key),
  });

export const tournamentRecordView =
  (tournamentId: string): RecordView<RankedRecord & { tournament_id: string }> =>
  (row, rank) => ({
    tournament_id: tournamentId,
    user_id: row.user_id,
    username: row.username,
    score: row.score,
    subscore: row.subscore,
    num_submissions: row.num_submissions,
    rank,
    metadata: row.metadata,
    created_at: timeOfKey(row.created_key),
    updated_at: timeOfKey(row.updated_key),
  });

/** Records at consecutive positions from `start` (0-based), those deleted meanwhile left out. */
function ranked<T>(rows: readonly (RecordRow | undefined)[], start: number, view: RecordView<T>): T[] {
  const items: T[] = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row) items.push(view(row, start + i + 1));
  }
  return items;
}

/**
 * The records of `keys` in the keys' order: one changed since its key was read is shown as it is
 * now, at the rank its key had; one deleted meanwhile is undefined (left out).
 */
const inKeyOrder = (keys: readonly RankKey[], rows: readonly RecordRow[]) => {
  const byUser = new Map(rows.map((row) => [row.user_id, row]));
  return keys.map((key) => byUser.get(key.userId));
};

/** A window's records at its positions, with a cursor after its last key when more records follow. */
function pageOfWindow<T>(window: Window, rows: readonly (RecordRow | undefined)[], view: RecordView<T>) {
  const more = window.start + window.keys.length < window.total;
  return {
    items: ranked(rows, window.start, view),
    next_cursor: more && window.keys.length > 0 ? cursorOf(window.keys.at(-1) as RankKey) : null,
  };
}

/** `count` keys around `key` from SQL over the records alone, as RankIndex.windowOf answers them. */
async function windowFromSql(
  data: Ctx['data'],
  period: StandingsPeriod,
  key: RankKey,
  before: number,
  count: number,
): Promise<Window> {
  const [position, total] = await Promise.all([countBefore(data, period, key), countRecords(data, period)]);
  const start = windowStart(position, before, count, total);
  return { start, total, keys: await keysFromPosition(data, period, start, count) };
}

/** Records each at the rank `positions` gives it. */
const rankedAt = <T>(positions: Positions, rows: readonly RecordRow[], view: RecordView<T>) =>
  Promise.all(rows.map(async (row) => view(row, (await positions.position(keyOfRow(row))) + 1)));

/** The ids of a `user_ids` selector that can name a user, canonical. */
function userIdsOf(text: string): string[] {
  const ids = [...new Set(text.split(','))];
  if (ids.length > MAX_USER_IDS || ids.some((id) => id === ''))
    throw refuse('user_ids', `must be 1-${MAX_USER_IDS} comma-separated user ids`);
  return ids.filter(isId).map(canonicalId);
}

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

  async page<T>(
    ctx: Ctx,
    period: StandingsPeriod,
    query: RecordsQuery,
    callerId: string | null,
    view: RecordView<T>,
  ): Promise<{ items: T[]; next_cursor: string | null }> {
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
    // Each path's first statement is guarded (guarded.repository.ts): it answers the period's
    // epoch, compared with the index's ready marker read beside it (one stage for both), and
    // StandingsGone when the board or tournament was deleted. An index read the marker refuses is
    // dropped.
    const marker = this.index.marker(period);

    if (selector === 'user_ids') {
      const ids = userIdsOf(query.user_ids as string);
      const [mark, read] = await Promise.all([marker, guardedRecordsOfUsers(ctx.data, period, ids)]);
      const { epoch, value: rows } = present(read);
      const positions = this.positionsOf(ctx, period, this.index.readyAt(period, mark, epoch));
      return { items: await rankedAt(positions, rows, view), next_cursor: null };
    }
    if (selector === 'friends') {
      const [mark, read] = await Promise.all([
        marker,
        this.friendsPage(ctx.data, period, callerId as string, after, query.limit + 1),
      ]);
      const { epoch, value: rows } = present(read);
      const positions = this.positionsOf(ctx, period, this.index.readyAt(period, mark, epoch));
      const page = rows.slice(0, query.limit);
      return {
        items: await rankedAt(positions, page, view),
        next_cursor: rows.length > query.limit ? cursorOf(keyOfRow(page.at(-1) as RecordRow)) : null,
      };
    }
    if (selector !== undefined) {
      const target = selector === 'around' ? (callerId as string) : (query.around_user_id as string);
      return this.around(ctx, period, marker, target, query.limit, view);
    }
    return this.list(ctx, period, marker, after, query.limit, view);
  }

  /**
   * A page from the top or after a cursor. The index's keys are read beside its marker, and the
   * page's guarded statement reads their records; when its epoch refuses the index (or the index
   * has no marker, or failed), the page is read from SQL alone.
   */
  private async list<T>(
    ctx: Ctx,
    period: StandingsPeriod,
    marker: Promise<string | null | undefined>,
    after: RankKey | undefined,
    limit: number,
    view: RecordView<T>,
  ) {
    const fromIndex = this.index.keysAfter(period, after, limit + 1).catch(() => undefined);
    const [mark, keys] = await Promise.all([marker, fromIndex]);
    let checked = false;
    if (typeof mark === 'string' && keys) {
      const page = keys.slice(0, limit);
      // From the top the first record is rank 1 on the index as on SQL: no position to read.
      const first =
        after === undefined || page.length === 0
          ? 0
          : this.index.position(period, page[0] as RankKey).catch(() => undefined);
      const [read, start] = await Promise.all([
        guardedRecordsOfUsers(
          ctx.data,
          period,
          page.map((key) => key.userId),
        ),
        first,
      ]);
      const { epoch, value: rows } = present(read);
      checked = true;
      if (this.index.readyAt(period, mark, epoch) && start !== undefined)
        return {
          items: ranked(inKeyOrder(page, rows), start, view),
          next_cursor: keys.length > limit ? cursorOf(page.at(-1) as RankKey) : null,
        };
    }
    const { epoch, value: rows } = present(await guardedRecordsAfter(ctx.data, period, after, limit + 1));
    // Starts the index's rebuild when it is due (once per answer).
    if (!checked) this.index.readyAt(period, mark, epoch);
    const page = rows.slice(0, limit);
    const start =
      after === undefined || page.length === 0
        ? 0
        : await countBefore(ctx.data, period, keyOfRow(page[0] as RecordRow));
    return {
      items: ranked(page, start, view),
      next_cursor: rows.length > limit ? cursorOf(keyOfRow(page.at(-1) as RecordRow)) : null,
    };
  }

  /**
   * The page centred on the user's record, or the top page when the user has none. The index's
   * window around the record it holds for the user is read beside its marker, and the window's
   * records by one guarded statement, whose epoch the marker must hold: two steps, as a top page
   * takes. When the index may not answer (the KV failed, no marker, another epoch) or `target`
   * names no user, the page is read from SQL alone.
   */
  private async around<T>(
    ctx: Ctx,
    period: StandingsPeriod,
    marker: Promise<string | null | undefined>,
    target: string,
    limit: number,
    view: RecordView<T>,
  ) {
    const before = Math.floor((limit - 1) / 2);
    const userId = isId(target) ? canonicalId(target) : undefined;
    const fromIndex =
      userId === undefined
        ? undefined
        : this.index.windowOf(period, userId, before, limit).catch(() => undefined);
    const [mark, window] = await Promise.all([marker, fromIndex]);
    let checked = false;
    if (typeof mark === 'string' && window) {
      const userIds = window.keys.map((key) => key.userId);
      const { epoch, value: rows } = present(await guardedRecordsOfUsers(ctx.data, period, userIds));
      checked = true;
      if (this.index.readyAt(period, mark, epoch))
        return pageOfWindow(window, inKeyOrder(window.keys, rows), view);
    }
    const ids = userId === undefined ? [] : [userId];
    const { epoch, value: rows } = present(await guardedRecordsOfUsers(ctx.data, period, ids));
    // Starts the index's rebuild when it is due (once per answer).
    if (!checked) this.index.readyAt(period, mark, epoch);
    const [row] = rows;
    // The top page, from SQL as well: the index's epoch was checked above, not again.
    if (!row) return this.list(ctx, period, NO_INDEX, undefined, limit, view);
    const fromSql = await windowFromSql(ctx.data, period, keyOfRow(row), before, limit);
    return pageOfWindow(fromSql, await this.rowsInOrder(ctx, period, fromSql.keys), view);
  }

  /** The records of `keys`, in their order (inKeyOrder). */
  private async rowsInOrder(ctx: Ctx, period: StandingsPeriod, keys: readonly RankKey[]) {
    const rows = await recordsOfUsers(
      ctx.data,
      period,
      keys.map((key) => key.userId),
    );
    return inKeyOrder(keys, rows);
  }

  /** The index's positions when it is ready, else SQL's over the records alone. */
  private positionsOf(ctx: Ctx, period: StandingsPeriod, ready: boolean): Positions {
    const index = this.index;
    if (ready) return { position: (key) => index.position(period, key) };
    const data = ctx.data;
    return { position: (key) => countBefore(data, period, key) };
  }
}
