import { Cron } from 'croner';

/**
 * A board's reset schedule: a five-field cron expression read in UTC, and the periods it cuts
 * time into. Pure: every function takes the times it needs, so periods follow from the one
 * injectable clock and are the same on every node.
 *
 * Our own parser checks the contract's grammar and computes each field's set of values (croner
 * accepts more: names, macros, seconds, L/W/#, and reads `a/n` and large steps its own way).
 * Croner then only searches times, given explicit value lists and the Vixie day rule as an
 * option, so its readings of `*`, steps and 7 never come into play.
 */

/** Refusal of a schedule text; the message is a sentence for the studio developer who wrote it. */
export class ResetScheduleError extends Error {
  override name = 'ResetScheduleError';
}

export interface ResetSchedule {
  /** The text as given. */
  readonly text: string;
  /** The first schedule time strictly after `t`. */
  nextAfter(t: Date): Date;
  /** The last schedule time at or before `t`, null when there is none. */
  latestAtOrBefore(t: Date): Date | null;
}

export interface Period {
  readonly startedAt: Date;
  /** The next period's start; null without a schedule (one period forever). */
  readonly nextResetAt: Date | null;
}

export interface EndedPeriod {
  readonly startedAt: Date;
  readonly endedAt: Date;
}

type Field = { name: string; min: number; max: number; values: string };

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59, values: 'minutes are 0-59' },
  { name: 'hour', min: 0, max: 23, values: 'hours are 0-23' },
  { name: 'day of month', min: 1, max: 31, values: 'days of month are 1-31' },
  { name: 'month', min: 1, max: 12, values: 'months are 1-12' },
  { name: 'day of week', min: 0, max: 7, values: 'days of week are 0-7, 0 and 7 being Sunday' },
];

/** `*`, `a` or `a-b`, then an optional `/n`. Numbers are decimal; leading zeros are allowed (`05`). */
const ITEM = /^(?:\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/;

const NEVER_FIRES_WITHIN_YEARS = 10;

/** Validates `text` against the contract's grammar and refuses one that never fires within 10 years of `now`. */
export function parseResetSchedule(text: string, now: Date): ResetSchedule {
  if (text.startsWith('@')) {
    throw new ResetScheduleError(
      `Macros such as ${text.split(' ')[0]} are not supported: write the five fields, e.g. "0 0 * * *" for every day at 00:00 UTC.`,
    );
  }
  if (!/^\S+( \S+)*$/.test(text)) {
    throw new ResetScheduleError(
      'A reset schedule is five fields (minute hour day-of-month month day-of-week) separated by single spaces, with no other spaces, tabs or line breaks.',
    );
  }
  const parts = text.split(' ');
  if (parts.length !== FIELDS.length) {
    throw new ResetScheduleError(
      `A reset schedule has exactly five fields (minute hour day-of-month month day-of-week), this one has ${parts.length}${parts.length > 5 ? ': seconds and year fields are not supported' : ''}.`,
    );
  }
  const sets = parts.map((part, i) => parseField(part, FIELDS[i] as Field));
  // 7 is Sunday as 0 is: croner is handed 0 only.
  const weekdays = sets[4] as Set<number>;
  if (weekdays.delete(7)) weekdays.add(0);
  // Vixie cron: a day matches when either day field matches only when neither starts with `*`.
  const bothDaysRestricted = !parts[2]?.startsWith('*') && !parts[4]?.startsWith('*');
  const pattern = sets.map((set) => [...set].sort((a, b) => a - b).join(',')).join(' ');
  const cron = new Cron(pattern, { utcOffset: 0, mode: '5-part', domAndDow: !bothDaysRestricted });

  const horizon = new Date(now);
  horizon.setUTCFullYear(horizon.getUTCFullYear() + NEVER_FIRES_WITHIN_YEARS);
  // A day of month no month given has (31 February) would send croner searching to year 9999
  // (tenths of a second): refuse it first. Otherwise it finds a time within decades at most.
  const impossible = !bothDaysRestricted && !hasDayInMonths(sets[2] as Set<number>, sets[3] as Set<number>);
  const first = impossible ? null : cron.nextRun(now);
  if (first === null || first > horizon) {
    throw new ResetScheduleError(
      `"${text}" never fires within ${NEVER_FIRES_WITHIN_YEARS} years: check that the day of month exists in the months given (February has a 29th only in leap years; April, June, September and November have no 31st) and, with a day of week too, that the two ever coincide.`,
    );
  }
  return new CronSchedule(text, cron);
}

/** Days in each month, February at its longest. */
const MONTH_LENGTHS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function hasDayInMonths(days: Set<number>, months: Set<number>): boolean {
  const longest = Math.max(...[...months].map((month) => MONTH_LENGTHS[month - 1] as number));
  return Math.min(...days) <= longest;
}

function parseField(part: string, field: Field): Set<number> {
  const values = new Set<number>();
  for (const item of part.split(',')) {
    const match = ITEM.exec(item);
    if (!match) throw new ResetScheduleError(describeBadItem(item, field));
    const [, from, to, step] = match;
    let low = field.min;
    let high = field.max;
    if (from !== undefined) {
      low = inRange(from, field);
      // `a/n` runs from a to the field's maximum; a lone `a` is just a.
      high = to !== undefined ? inRange(to, field) : step !== undefined ? field.max : low;
      if (low > high) {
        throw new ResetScheduleError(
          `The ${field.name} range ${from}-${to} runs backwards: write the smaller number first.`,
        );
      }
    }
    const stride = step === undefined ? 1 : Number(step);
    if (stride < 1) {
      throw new ResetScheduleError(`The step /${step} in the ${field.name} field must be 1 or more.`);
    }
    for (let value = low; value <= high; value += stride) values.add(value);
  }
  return values;
}

function inRange(digits: string, field: Field): number {
  const value = Number(digits);
  if (value < field.min || value > field.max) {
    throw new ResetScheduleError(`The ${field.name} ${digits} is out of range: ${field.values}.`);
  }
  return value;
}

function describeBadItem(item: string, field: Field): string {
  if (item === '') return `The ${field.name} field has an empty item: remove the extra comma.`;
  if (item.includes('?')) return `"?" is not supported (${field.name} field): use "*" for any value.`;
  if (item.includes('#')) {
    return `"${item}": "#" (the nth weekday of a month) is not supported; list days of week as numbers 0-7.`;
  }
  if (/^\d*[LW]+$/i.test(item)) {
    return `"${item}": L and W (last day, nearest weekday) are not supported; list days of month as numbers 1-31.`;
  }
  if (/[a-z]/i.test(item)) {
    return `"${item}": names such as MON or JAN are not supported; write numbers (months 1-12, days of week 0-7 with 0 and 7 Sunday).`;
  }
  return `The ${field.name} field's "${item}" is not *, a number or a range a-b, each optionally followed by a step /n.`;
}

class CronSchedule implements ResetSchedule {
  constructor(
    readonly text: string,
    private readonly cron: Cron,
  ) {}

  nextAfter(t: Date): Date {
    const next = this.cron.nextRun(t);
    // A validated schedule repeats with the 400-year calendar; only croner's year 9999 limit ends it.
    if (next === null) throw new Error(`reset schedule "${this.text}" has no time after ${t.toISOString()}`);
    return next;
  }

  latestAtOrBefore(t: Date): Date | null {
    // previousRuns is strictly before its reference; schedule times are whole minutes.
    return this.cron.previousRuns(1, new Date(t.getTime() + 1))[0] ?? null;
  }
}

/**
 * The period containing `t`: the first starts at `createdAt`, a new one at each schedule time
 * strictly after it (start <= t < next start). A `t` before `createdAt` (another node's clock a
 * little behind) gets the first period.
 */
export function periodAt(schedule: ResetSchedule | null, createdAt: Date, t: Date): Period {
  if (schedule === null) return { startedAt: createdAt, nextResetAt: null };
  const startedAt = startOfPeriodAt(schedule, createdAt, t);
  return { startedAt, nextResetAt: schedule.nextAfter(startedAt) };
}

/** The period that ended when the one containing `t` started; null before the first reset. */
export function previousPeriodAt(
  schedule: ResetSchedule | null,
  createdAt: Date,
  t: Date,
): EndedPeriod | null {
  if (schedule === null) return null;
  const endedAt = startOfPeriodAt(schedule, createdAt, t);
  if (endedAt.getTime() === createdAt.getTime()) return null;
  return { startedAt: startOfPeriodAt(schedule, createdAt, new Date(endedAt.getTime() - 1)), endedAt };
}

function startOfPeriodAt(schedule: ResetSchedule, createdAt: Date, t: Date): Date {
  const latest = schedule.latestAtOrBefore(t);
  return latest !== null && latest > createdAt ? latest : createdAt;
}

/**
 * One board's current period, recomputed only when a time falls outside the cached one. Callers'
 * times mostly increase but not strictly (several requests, several clocks read a moment apart):
 * a time before the cached period is answered by computing, and does not evict the newer period.
 * Answers are shared between callers: do not mutate their Dates.
 */
export class BoardPeriods {
  private cached: Period | null = null;

  constructor(
    private readonly schedule: ResetSchedule | null,
    private readonly createdAt: Date,
  ) {}

  at(t: Date): Period {
    const cached = this.cached;
    if (cached && t >= cached.startedAt && (cached.nextResetAt === null || t < cached.nextResetAt)) {
      return cached;
    }
    const period = periodAt(this.schedule, this.createdAt, t);
    if (!cached || period.startedAt > cached.startedAt) this.cached = period;
    return period;
  }
}
