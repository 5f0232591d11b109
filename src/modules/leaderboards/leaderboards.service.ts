import { randomUUID } from 'node:crypto';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import { decodeCursor, encodeCursor } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { AuditApi } from '../audit/index.js';
import { BoardCopies, notFound } from './board-copies.js';
import {
  type BoardRow,
  boardsPage,
  deleteBoard,
  insertBoard,
  periodsWithRecords,
} from './boards.repository.js';
import { submitRecord } from './guarded.repository.js';
import type { RankIndex } from './rank-index.js';
import { deleteRecord, deleteStandings, keyOfRow, type StandingsPeriod } from './records.repository.js';
import {
  BoardPeriods,
  type Period,
  parseResetSchedule,
  previousPeriodAt,
  type ResetSchedule,
  ResetScheduleError,
} from './reset-schedule.js';
import { boardRecordView, type RecordsQuery, StandingsGone, type StandingsReader } from './standings.js';
import type { Writer, Writers } from './writers.js';

export interface LeaderboardsDeps {
  index: RankIndex;
  reader: StandingsReader;
  audit: AuditApi;
  writers: Writers;
  /** Told of each end a write makes owed an event, so every node's scheduler wakes for it. */
  ends: { noted(key: string, endsAt: Date): void };
}

export interface NewBoardInput {
  id: string;
  sort?: 'asc' | 'desc';
  operator?: 'best' | 'set' | 'incr';
  reset_schedule?: string | null;
  authoritative?: boolean;
  metadata?: unknown;
}

export interface SubmissionInput {
  score: number;
  subscore?: number;
  metadata?: unknown;
}

/** The most boards whose periods a node keeps computed. */
const PERIOD_CACHE_MAX = 10_000;

/**
 * Boards and their records (docs/leaderboards.md). Periods follow from the time of each answer
 * (`ctx.now()`), so a reset takes effect at its exact time on every node whether or not the
 * scheduler ran; ranks come from the rank index, or SQL while it is rebuilt.
 */
export class LeaderboardsService {
  /** Each board incarnation's schedule and current period, computed once per period. */
  private readonly periods = new Map<string, { schedule: ResetSchedule | null; periods: BoardPeriods }>();
  private readonly boards = new BoardCopies((board) => this.periods.delete(board.ref));

  constructor(private readonly deps: LeaderboardsDeps) {}

  async create(ctx: Ctx, input: NewBoardInput) {
    const now = ctx.now();
    const schedule = input.reset_schedule ?? null;
    // Part of the request's validation, so it answers 422 before the role's 403.
    if (schedule !== null) scheduleOrRefuse(schedule, now);
    const caller = requireRole(ctx, 'admin');
    const created = await transaction(ctx.data, async (tx) => {
      const row = await insertBoard(tx, {
        id: input.id,
        ref: randomUUID(),
        sort: input.sort ?? 'desc',
        operator: input.operator ?? 'best',
        resetSchedule: schedule,
        authoritative: input.authoritative ?? false,
        metadataJson: JSON.stringify(input.metadata ?? {}),
        createdAt: now,
      });
      if (!row) return undefined;
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'leaderboards.create',
        target: { type: 'leaderboard', id: row.id },
        before: null,
        after: this.view(row, now),
      });
      return row;
    });
    if (!created) throw new AppError(ErrorCode.CONFLICT, `A leaderboard ${input.id} exists already.`);
    this.boards.remember(created);
    return this.view(created, now);
  }

  async delete(ctx: Ctx, id: string): Promise<void> {
    const caller = requireRole(ctx, 'admin');
    const now = ctx.now();
    const deleted = await transaction(ctx.data, async (tx) => {
      const row = await deleteBoard(tx, id);
      if (!row) return undefined;
      const periods = await periodsWithRecords(tx, row.ref);
      await deleteStandings(tx, row.ref);
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'leaderboards.delete',
        target: { type: 'leaderboard', id: row.id },
        before: this.view(row, now),
        after: null,
      });
      return { row, periods };
    });
    if (!deleted) throw notFound(id);
    this.boards.forget(deleted.row);
    await this.deps.index
      .drop(deleted.periods.map((periodStart) => ({ ref: deleted.row.ref, periodStart })))
      .catch((error: unknown) => ctx.log.warn({ err: error }, 'a deleted board kept its rank index keys'));
  }

  async list(ctx: Ctx, query: { limit: number; cursor?: string }) {
    callerOf(ctx);
    const after = decodeCursor(query.cursor, isBoardKey)?.[0] ?? null;
    const rows = await boardsPage(ctx.data, after, query.limit + 1);
    const now = ctx.now();
    const page = rows.slice(0, query.limit);
    return {
      items: page.map((row) => this.view(row, now)),
      next_cursor: rows.length > query.limit ? encodeCursor([(page.at(-1) as BoardRow).id]) : null,
    };
  }

  async get(ctx: Ctx, id: string) {
    callerOf(ctx);
    return this.view(await this.boards.read(ctx, id), ctx.now());
  }

  /**
   * A submission, checked in the contract's order: the request (already validated), the board,
   * authoritative (users only), the rate (users only), then the operator's range.
   */
  async submit(ctx: Ctx, id: string, input: SubmissionInput, writer: Writer) {
    return this.boards.with(ctx, id, (board) => this.submitTo(ctx, board, input, writer));
  }

  private async submitTo(ctx: Ctx, board: BoardRow, input: SubmissionInput, writer: Writer) {
    const userId = await this.deps.writers.submitter(ctx, writer, board.authoritative);
    // One time for the whole answer: the period and the record's updated_at agree.
    const now = ctx.now();
    const current = this.periodOf(board, now);
    const written = await submitRecord(ctx.data, board.operator, {
      ref: board.ref,
      periodStart: current.startedAt,
      periodEnd: current.nextResetAt,
      userId,
      score: input.score,
      subscore: input.subscore ?? 0,
      metadataJson: input.metadata === undefined ? null : JSON.stringify(input.metadata),
      sign: board.sort === 'asc' ? 1 : -1,
      now,
    });
    // The period is owed a reset event once it ends (a no-op past its first submission here).
    if (written && current.nextResetAt) this.deps.ends.noted(board.ref, current.nextResetAt);
    const row = written?.value;
    if (!row) {
      await this.deps.writers.refund(writer, userId);
      if (!written) throw new StandingsGone();
      throw new AppError(
        ErrorCode.SCORE_OUT_OF_RANGE,
        'The sum would leave ±(2^53-1); the record is unchanged.',
      );
    }
    // The rank's reads leave right behind the index's change, in the same tick: the KV runs them
    // in order, so they see it, and it costs one round trip. When the change did not take, the
    // period's epoch was bumped and those reads are dropped for SQL's rank.
    const period = { ref: board.ref, periodStart: current.startedAt, epoch: written.epoch };
    const applying = this.deps.index.apply(period, userId, row.version, keyOfRow(row));
    const ranking = this.deps.reader.rankOf(ctx, period, row);
    const applied = await applying;
    const view = boardRecordView(board.id);
    if (applied === period) return view(row, await ranking);
    ranking.catch(() => {});
    return view(row, await this.deps.reader.rankOf(ctx, applied, row));
  }

  async records(ctx: Ctx, id: string, query: RecordsQuery & { period?: 'current' | 'previous' }) {
    return this.recordsFor(ctx, id, query, callerOf(ctx).id);
  }

  /** A records list for `callerId`, or for server code (no caller: `around=me` and `friends` name no one). */
  async recordsFor(
    ctx: Ctx,
    id: string,
    query: RecordsQuery & { period?: 'current' | 'previous' },
    callerId: string | null,
  ) {
    return this.boards.with(ctx, id, async (board) => {
      const now = ctx.now();
      const chosen = this.periodChosen(board, now, query.period);
      if (!chosen) {
        // No statement reads standings here: the board's row is read instead.
        if ((await this.boards.read(ctx, id)).ref !== board.ref) throw new StandingsGone();
        return { items: [], next_cursor: null, period_started_at: null, period_ended_at: null };
      }
      const page = await this.deps.reader.page(
        ctx,
        chosen.period,
        query,
        callerId,
        boardRecordView(board.id),
      );
      return {
        items: page.items,
        next_cursor: page.next_cursor,
        period_started_at: chosen.period.periodStart.toISOString(),
        period_ended_at: chosen.endedAt?.toISOString() ?? null,
      };
    });
  }

  async record(ctx: Ctx, id: string, userId: string, period?: 'current' | 'previous') {
    const caller = callerOf(ctx);
    return this.boards.with(ctx, id, async (board) => {
      const chosen = this.periodChosen(board, ctx.now(), period);
      const noRecord = () => new AppError(ErrorCode.NOT_FOUND, 'That user has no record in this period.');
      if (!chosen || !isId(userId)) throw noRecord();
      const page = await this.deps.reader.page(
        ctx,
        chosen.period,
        { limit: 1, user_ids: userId },
        caller.id,
        boardRecordView(board.id),
      );
      const [found] = page.items;
      if (!found) throw noRecord();
      return found;
    });
  }

  /** Deletes a user's record in the current period (none is no error); the others move up. */
  async deleteRecord(ctx: Ctx, id: string, writer: Writer): Promise<void> {
    const board = await this.boards.read(ctx, id);
    const userId = await this.deps.writers.deleter(ctx, writer, board.authoritative);
    const period = this.currentPeriod(board, ctx.now());
    const deleted = await deleteRecord(ctx.data, period, userId);
    if (deleted) await this.deps.index.apply(period, userId, deleted.version, undefined);
  }

  /** An admin's deletion of a user's record in the current period (a cheater's), audited with the reason. */
  async adminDeleteRecord(ctx: Ctx, id: string, userId: string, reason: string): Promise<void> {
    const caller = requireRole(ctx, 'admin');
    const board = await this.boards.read(ctx, id);
    if (!isId(userId)) return;
    const user = canonicalId(userId);
    const period = this.currentPeriod(board, ctx.now());
    const deleted = await transaction(ctx.data, async (tx) => {
      const record = await deleteRecord(tx, period, user);
      if (record)
        await this.deps.audit.record(tx, {
          actor: { kind: 'user', id: caller.id },
          action: 'leaderboards.records.delete',
          target: { type: 'leaderboard', id: board.id },
          before: {
            user_id: user,
            period_started_at: period.periodStart.toISOString(),
            score: record.score,
            subscore: record.subscore,
            num_submissions: record.num_submissions,
          },
          // The record is gone; what remains of it is why.
          after: { reason },
        });
      return record;
    });
    if (deleted) await this.deps.index.apply(period, user, deleted.version, undefined);
  }

  private periodsOf(board: BoardRow) {
    let entry = this.periods.get(board.ref);
    if (!entry) {
      // A stored schedule was checked when created: its horizon is read from then, not now.
      const schedule =
        board.reset_schedule === null ? null : parseResetSchedule(board.reset_schedule, board.created_at);
      entry = { schedule, periods: new BoardPeriods(schedule, board.created_at) };
      if (this.periods.size >= PERIOD_CACHE_MAX) this.periods.clear();
      this.periods.set(board.ref, entry);
    }
    return entry;
  }

  private periodOf(board: BoardRow, now: Date): Period {
    return this.periodsOf(board).periods.at(now);
  }

  private currentPeriod(board: BoardRow, now: Date): StandingsPeriod {
    return { ref: board.ref, periodStart: this.periodOf(board, now).startedAt };
  }

  /** The period a read asks for, with its end; undefined for a previous period that does not exist yet. */
  private periodChosen(board: BoardRow, now: Date, which: 'current' | 'previous' = 'current') {
    if (which === 'current') return { period: this.currentPeriod(board, now), endedAt: null };
    const previous = previousPeriodAt(this.periodsOf(board).schedule, board.created_at, now);
    if (!previous) return undefined;
    return { period: { ref: board.ref, periodStart: previous.startedAt }, endedAt: previous.endedAt };
  }

  private view(board: BoardRow, now: Date) {
    const period = this.periodOf(board, now);
    return {
      id: board.id,
      sort: board.sort,
      operator: board.operator,
      reset_schedule: board.reset_schedule,
      authoritative: board.authoritative,
      metadata: board.metadata,
      created_at: board.created_at.toISOString(),
      period_started_at: period.startedAt.toISOString(),
      next_reset_at: period.nextResetAt?.toISOString() ?? null,
    };
  }
}

function scheduleOrRefuse(text: string, now: Date): void {
  try {
    parseResetSchedule(text, now);
  } catch (error) {
    if (!(error instanceof ResetScheduleError)) throw error;
    throw new AppError(ErrorCode.VALIDATION_FAILED, `reset_schedule: ${error.message}`, {
      errors: [{ path: 'reset_schedule', message: error.message }],
    });
  }
}

const BOARD_ID = /^[a-z0-9_-]{1,64}$/;

/** A boards page's key: the last board's id. */
const isBoardKey = (value: unknown): value is [string] =>
  Array.isArray(value) && value.length === 1 && typeof value[0] === 'string' && BOARD_ID.test(value[0]);
