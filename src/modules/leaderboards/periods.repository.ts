import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/**
 * The scheduler's SQL (migration 0033): the periods that hold records and still owe their end's
 * event, claimed once in the cluster, and the removal of periods past those a board keeps.
 */

export interface PendingPeriod {
  ref: string;
  period_start: Date;
  period_end: Date;
  leaderboard_id: string;
  reset_schedule: string;
  created_at: Date;
}

const PENDING_SQL = `
  select p.standings_ref as ref, p.period_start, p.period_end, b.id as leaderboard_id, b.reset_schedule,
    b.created_at
  from leaderboard_periods p join leaderboards b on b.ref = p.standings_ref
  where p.ended_event_at is null and p.period_end <= $1
  order by p.period_end
  limit $2`;

const ANY_ENDED_SQL = `
  select exists (select 1 from leaderboard_periods where ended_event_at is null and period_end <= $1)
    or exists (select 1 from tournaments where ended_event_at is null and end_at <= $1) as ended`;

/**
 * Whether any period or tournament ended by `now` and was not announced yet: one statement, so a
 * scheduler pass with nothing to do (nearly all of them) runs one instead of the two reads.
 */
export async function anythingEnded(data: DataAccess, now: Date): Promise<boolean> {
  const [row] = await executeBound<{ ended: boolean }>(data, ANY_ENDED_SQL, [now]);
  return row?.ended === true;
}

const NEXT_END_SQL = `
  select least(
    (select min(period_end) from leaderboard_periods where ended_event_at is null),
    (select min(end_at) from tournaments where ended_event_at is null)) as due`;

/**
 * The earliest end of a period holding records or of a tournament not announced yet (ended or
 * not), by the two pending indexes; null when nothing is owed an event.
 */
export async function nextEnd(data: DataAccess): Promise<Date | null> {
  const [row] = await executeBound<{ due: Date | null }>(data, NEXT_END_SQL, []);
  return row?.due ?? null;
}

/** Periods that ended by `now` and were not announced yet, oldest first. */
export async function pendingPeriods(data: DataAccess, now: Date, limit: number): Promise<PendingPeriod[]> {
  return executeBound<PendingPeriod>(data, PENDING_SQL, [now, limit]);
}

const LOCK_SQL = 'select 1 from leaderboards where ref = $1 for update skip locked';

/** Takes the board for the transaction; false when another node has it (it emits its periods). */
export async function lockBoard(tx: DataAccess, ref: string): Promise<boolean> {
  return (await executeBound(tx, LOCK_SQL, [ref])).length > 0;
}

const CLAIM_SQL = `
  update leaderboard_periods set ended_event_at = $3
  where standings_ref = $1 and period_start = $2 and ended_event_at is null
  returning exists (
    select 1 from leaderboard_records r where r.standings_ref = $1 and r.period_start = $2
  ) as had_records`;

/**
 * Marks an ended period as announced: undefined when it already was; else whether it holds
 * records (an idle period is marked without an event).
 */
export async function claimEndedPeriod(
  tx: DataAccess,
  ref: string,
  periodStart: Date,
  at: Date,
): Promise<{ had_records: boolean } | undefined> {
  const [row] = await executeBound<{ had_records: boolean }>(tx, CLAIM_SQL, [ref, periodStart, at]);
  return row;
}

const OLD_PERIODS_SQL = `
  select period_start from leaderboard_periods
  where standings_ref = $1 and period_start < $2 and ended_event_at is not null`;
const PRUNE_SQL = [
  'delete from leaderboard_records where standings_ref = $1 and period_start < $2',
  'delete from leaderboard_periods where standings_ref = $1 and period_start < $2 and ended_event_at is not null',
];

/** Removes a board's announced periods that started before `keptFrom`; answers their starts. */
export async function pruneOldPeriods(tx: DataAccess, ref: string, keptFrom: Date): Promise<Date[]> {
  const old = await executeBound<{ period_start: Date }>(tx, OLD_PERIODS_SQL, [ref, keptFrom]);
  if (old.length === 0) return [];
  for (const sql of PRUNE_SQL) await executeBound(tx, sql, [ref, keptFrom]);
  return old.map((row) => row.period_start);
}
