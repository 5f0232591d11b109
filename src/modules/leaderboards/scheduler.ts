import type { DataAccess } from '../../platform/data-access.js';
import { transaction } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import type { Outbox } from '../../platform/outbox.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import {
  anythingEnded,
  claimEndedPeriod,
  lockBoard,
  type PendingPeriod,
  pendingPeriods,
  pruneOldPeriods,
} from './periods.repository.js';
import type { RankIndex } from './rank-index.js';
import { recordsAfter } from './records.repository.js';
import { parseResetSchedule, periodAt, previousPeriodAt, type ResetSchedule } from './reset-schedule.js';
import { tournamentRecordView } from './standings.js';
import { claimEndedTournament, type EndedTournament, endedTournaments } from './tournaments.repository.js';
import { standingsOf } from './tournaments.service.js';

export const LEADERBOARD_RESET = 'leaderboard.reset';
export const TOURNAMENT_ENDED = 'tournament.ended';
/** The records a tournament's end event carries. */
const ENDED_STANDINGS = 100;

/** Ended periods one statement reads; a pass reads until fewer come back. */
const BATCH = 500;

export interface SchedulerOptions {
  data: () => DataAccess;
  outbox: Pick<Outbox, 'record'>;
  index: Pick<RankIndex, 'drop'>;
  log: Pick<Logger, 'warn' | 'error'>;
  /** The one clock: the same the answers read their periods from. */
  clock: () => Date;
  intervalMs: number;
  periodsKept: number;
}

/**
 * The scheduler every node runs (docs/leaderboards.md, "Periods and resets"). It only sends
 * events and tidies: periods and tournament states follow from the clock at each answer, whatever
 * it does. Each pass finds the periods that ended holding records and records one
 * `leaderboard.reset` per period in the outbox, in period order per board, in the transaction
 * that marks the period announced: the node that takes a board's row (skip locked) announces its
 * periods, so two nodes never both do, and a node that stops before committing leaves them to the
 * next pass of any node. Then it removes the periods past LEADERBOARD_PERIODS_KEPT. Tournaments
 * past their end_at get one `tournament.ended` each the same way, marked on their own row.
 */
export class LeaderboardScheduler {
  private readonly repeating: RepeatingPass;
  private readonly schedules = new Map<string, ResetSchedule>();

  constructor(private readonly options: SchedulerOptions) {
    this.repeating = new RepeatingPass(() => this.runOnce(), {
      intervalMs: options.intervalMs,
      log: options.log,
      name: 'a leaderboard scheduler pass',
    });
  }

  start(): void {
    this.repeating.start();
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  /** One pass at the clock's time (tests, and the timer). */
  async runOnce(): Promise<void> {
    const now = this.options.clock();
    if (!(await anythingEnded(this.options.data(), now))) return;
    for (;;) {
      const pending = await pendingPeriods(this.options.data(), now, BATCH);
      let announcedAny = false;
      for (const periods of byBoard(pending))
        announcedAny = (await this.announce(periods, now)) || announcedAny;
      // Boards another node holds stay pending: their periods are its to announce.
      if (pending.length < BATCH || !announcedAny) break;
    }
    for (;;) {
      const ended = await endedTournaments(this.options.data(), now, BATCH);
      for (const tournament of ended) await this.announceEnd(tournament, now);
      if (ended.length < BATCH) return;
    }
  }

  /**
   * Records a tournament's end with its final standings, in the transaction that marks it
   * announced: the node whose update marks it records the event, any other finds it marked.
   */
  private async announceEnd(tournament: EndedTournament, now: Date): Promise<void> {
    await transaction(this.options.data(), async (tx) => {
      const size = await claimEndedTournament(tx, tournament.ref, now);
      if (size === undefined) return;
      const top = await recordsAfter(tx, standingsOf(tournament), undefined, ENDED_STANDINGS);
      const view = tournamentRecordView(tournament.id);
      await this.options.outbox.record(tx, TOURNAMENT_ENDED, {
        tournament_id: tournament.id,
        start_at: tournament.start_at.toISOString(),
        end_at: tournament.end_at.toISOString(),
        size,
        standings: top.map((row, i) => view(row, i + 1)),
      });
    });
  }

  /** Announces a board's ended periods in order, then removes those it no longer keeps. */
  private async announce(periods: PendingPeriod[], now: Date): Promise<boolean> {
    const board = periods[0] as PendingPeriod;
    const schedule = this.scheduleOf(board);
    const keptFrom = this.keptFrom(schedule, board.created_at, now);
    const dropped = await transaction(this.options.data(), async (tx) => {
      if (!(await lockBoard(tx, board.ref))) return undefined;
      for (const period of periods) {
        const claimed = await claimEndedPeriod(tx, board.ref, period.period_start, now);
        if (!claimed?.had_records) continue;
        await this.options.outbox.record(tx, LEADERBOARD_RESET, {
          leaderboard_id: board.leaderboard_id,
          period_started_at: period.period_start.toISOString(),
          period_ended_at: period.period_end.toISOString(),
        });
      }
      return pruneOldPeriods(tx, board.ref, keptFrom);
    });
    if (dropped === undefined) return false;
    if (dropped.length > 0)
      await this.options.index
        .drop(dropped.map((periodStart) => ({ ref: board.ref, periodStart })))
        .catch((error: unknown) =>
          this.options.log.warn({ err: error }, 'removed periods kept their rank index keys'),
        );
    return true;
  }

  /** The start of the oldest period a board keeps: the current one's, then LEADERBOARD_PERIODS_KEPT before it. */
  private keptFrom(schedule: ResetSchedule, createdAt: Date, now: Date): Date {
    let start = periodAt(schedule, createdAt, now).startedAt;
    for (let kept = 0; kept < this.options.periodsKept; kept++) {
      const previous = previousPeriodAt(schedule, createdAt, start);
      if (!previous) break;
      start = previous.startedAt;
    }
    return start;
  }

  private scheduleOf(board: PendingPeriod): ResetSchedule {
    let schedule = this.schedules.get(board.ref);
    if (!schedule) {
      schedule = parseResetSchedule(board.reset_schedule, board.created_at);
      if (this.schedules.size >= 10_000) this.schedules.clear();
      this.schedules.set(board.ref, schedule);
    }
    return schedule;
  }
}

/** Pending periods grouped by board, each group in period order, boards in order of their oldest. */
function byBoard(pending: readonly PendingPeriod[]): PendingPeriod[][] {
  const groups = new Map<string, PendingPeriod[]>();
  for (const period of pending) {
    const group = groups.get(period.ref);
    if (group) group.push(period);
    else groups.set(period.ref, [period]);
  }
  return [...groups.values()];
}
