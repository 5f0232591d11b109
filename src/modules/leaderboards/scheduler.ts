import type { EventBus } from '../../platform/bus.js';
import type { DataAccess } from '../../platform/data-access.js';
import { transaction } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import type { Outbox } from '../../platform/outbox.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import {
  anythingEnded,
  claimEndedPeriod,
  lockBoard,
  nextEnd,
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

/** Where a node that noted a new end (a board's period, a tournament) tells the others' schedulers. */
export const LEADERBOARD_ENDS_TOPIC = 'leaderboards:ends';
/** The most boards whose announced period end a node remembers (it announces again past that). */
const ANNOUNCED_MAX = 10_000;

export interface SchedulerOptions {
  data: () => DataAccess;
  outbox: Pick<Outbox, 'record'>;
  index: Pick<RankIndex, 'drop'>;
  log: Pick<Logger, 'warn' | 'error'>;
  /** The one clock: the same the answers read their periods from. */
  clock: () => Date;
  /**
   * How soon a pass follows one that left ended periods to another node (which holds their
   * board); and the longest the timer sleeps towards a known end.
   */
  intervalMs: number;
  /**
   * The longest a node sleeps when it knows of no end sooner: the safety net for an end it was
   * not told of (an announcement lost with Redis). Ends noted on any node wake it before.
   */
  restMs: number;
  periodsKept: number;
  /** Where nodes tell each other of new ends; without it only this node's own are heard. */
  bus?: Pick<EventBus, 'publish' | 'subscribe'>;
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
 *
 * The timer does not poll: a pass asks for the earliest end still owed an event (one statement)
 * and sleeps until it, at most `restMs`. A submission that notes a new period and a tournament's
 * creation tell every node's scheduler of the new end through the bus (`noted`), which wakes it
 * sooner when that end comes first.
 */
export class LeaderboardScheduler {
  private readonly repeating: RepeatingPass;
  private readonly schedules = new Map<string, ResetSchedule>();
  /** Each board's last period end this node told the others of: once per board and period. */
  private readonly announced = new Map<string, number>();
  private unsubscribe: Promise<() => Promise<void>> | undefined;

  constructor(private readonly options: SchedulerOptions) {
    this.repeating = new RepeatingPass(() => this.timedPass(), {
      intervalMs: options.restMs,
      log: options.log,
      name: 'a leaderboard scheduler pass',
    });
  }

  start(): void {
    this.unsubscribe = this.options.bus
      ?.subscribe(LEADERBOARD_ENDS_TOPIC, (event) => this.wakeAt(Date.parse(String(event.d))))
      .catch((err) => {
        this.options.log.warn({ err }, "leaderboards: not told of other nodes' ends; every restMs only");
        return async () => undefined;
      });
    this.repeating.start();
  }

  async stop(): Promise<void> {
    await this.repeating.stop();
    await (await this.unsubscribe)?.();
  }

  /**
   * A new end is owed an event at `endsAt` (`key`: the board whose period it ends, or the
   * tournament): wakes this node's scheduler by then, and every other node's through the bus,
   * once per key and end on this node.
   */
  noted(key: string, endsAt: Date): void {
    const at = endsAt.getTime();
    if (this.announced.get(key) === at) return;
    if (this.announced.size >= ANNOUNCED_MAX) this.announced.clear();
    this.announced.set(key, at);
    this.wakeAt(at);
    // Lost with Redis, the other nodes find the end within restMs.
    this.options.bus
      ?.publish(LEADERBOARD_ENDS_TOPIC, { t: 'leaderboards.end', d: endsAt.toISOString() })
      .catch(() => undefined);
  }

  private wakeAt(at: number): void {
    if (Number.isNaN(at)) return;
    this.repeating.wakeWithin(at - this.options.clock().getTime());
  }

  /**
   * The timer's pass: announces what ended, then answers how long to sleep: until the earliest
   * end still owed (at most restMs), or intervalMs when ended periods are left to the node that
   * holds their board.
   */
  private async timedPass(): Promise<number> {
    const { data, clock, intervalMs, restMs } = this.options;
    let due = await nextEnd(data());
    let now = clock();
    if (due !== null && due <= now) {
      await this.announceEnded(now);
      due = await nextEnd(data());
      now = clock();
      if (due !== null && due <= now) return intervalMs;
    }
    return due === null ? restMs : Math.min(restMs, due.getTime() - now.getTime());
  }

  /** One pass at the clock's time (tests). */
  async runOnce(): Promise<void> {
    const now = this.options.clock();
    if (!(await anythingEnded(this.options.data(), now))) return;
    await this.announceEnded(now);
  }

  /** Announces every period and tournament ended by `now` that no node announced yet. */
  private async announceEnded(now: Date): Promise<void> {
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
