import { describe, expect, it } from 'vitest';
import {
  BoardPeriods,
  parseResetSchedule,
  periodAt,
  previousPeriodAt,
  type ResetSchedule,
  ResetScheduleError,
} from '../../src/modules/leaderboards/reset-schedule.js';

// Every time is given: these are the fake clock's readings.
const at = (iso: string) => new Date(iso);
const JAN_2027 = at('2027-01-01T00:00:00Z');

/** The first `count` schedule times strictly after `from`, as ISO strings. */
function firesAfter(text: string, from: Date, count: number): string[] {
  const schedule = parseResetSchedule(text, from);
  const times: string[] = [];
  let t = from;
  for (let i = 0; i < count; i++) {
    t = schedule.nextAfter(t);
    times.push(t.toISOString());
  }
  return times;
}

describe('reset schedule times (UTC, no daylight saving)', () => {
  it.each(['2027-03-28', '2027-10-31', '2027-03-14', '2027-11-07'])(
    'a "30 2 * * *" board resets at 02:30 UTC on the daylight-saving change day %s, and 24 hours later',
    (day) => {
      expect(firesAfter('30 2 * * *', at(`${day}T00:00:00Z`), 2)).toEqual([
        `${day}T02:30:00.000Z`,
        new Date(Date.parse(`${day}T02:30:00Z`) + 24 * 3600_000).toISOString(),
      ]);
    },
  );

  it('"0 0 31 * *" fires on the 31st and skips the 30-day months and February', () => {
    expect(firesAfter('0 0 31 * *', JAN_2027, 7)).toEqual([
      '2027-01-31T00:00:00.000Z',
      '2027-03-31T00:00:00.000Z',
      '2027-05-31T00:00:00.000Z',
      '2027-07-31T00:00:00.000Z',
      '2027-08-31T00:00:00.000Z',
      '2027-10-31T00:00:00.000Z',
      '2027-12-31T00:00:00.000Z',
    ]);
  });

  it('"0 0 28,29 2 *" fires on February 28 every year and on February 29 in leap years', () => {
    expect(firesAfter('0 0 28,29 2 *', JAN_2027, 4)).toEqual([
      '2027-02-28T00:00:00.000Z',
      '2028-02-28T00:00:00.000Z',
      '2028-02-29T00:00:00.000Z',
      '2029-02-28T00:00:00.000Z',
    ]);
  });

  it.each([
    ['2027-06-01T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ['1999-06-01T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    // 2100 is not a leap year (divisible by 100, not by 400): the next leap day is in 2104.
    ['2099-06-01T00:00:00Z', '2104-02-29T00:00:00.000Z'],
  ])('"0 0 29 2 *" accepted at %s fires first on the leap day %s', (now, leapDay) => {
    expect(firesAfter('0 0 29 2 *', at(now), 1)).toEqual([leapDay]);
  });

  it('when both day fields are restricted a day matches either: "0 0 13 * 5" is every 13th and every Friday', () => {
    // 2027-01-01 is a Friday; 2027-01-13 a Wednesday.
    expect(firesAfter('0 0 13 * 5', JAN_2027, 6)).toEqual([
      '2027-01-08T00:00:00.000Z',
      '2027-01-13T00:00:00.000Z',
      '2027-01-15T00:00:00.000Z',
      '2027-01-22T00:00:00.000Z',
      '2027-01-29T00:00:00.000Z',
      '2027-02-05T00:00:00.000Z',
    ]);
  });

  it('"0 0 * * 5" restricts the day of week only: Fridays', () => {
    expect(firesAfter('0 0 * * 5', JAN_2027, 3)).toEqual([
      '2027-01-08T00:00:00.000Z',
      '2027-01-15T00:00:00.000Z',
      '2027-01-22T00:00:00.000Z',
    ]);
  });

  it('"0 0 13 * *" restricts the day of month only: the 13th', () => {
    expect(firesAfter('0 0 13 * *', JAN_2027, 3)).toEqual([
      '2027-01-13T00:00:00.000Z',
      '2027-02-13T00:00:00.000Z',
      '2027-03-13T00:00:00.000Z',
    ]);
  });

  it('a day field starting with * (a step) makes both day fields apply: "0 0 */2 * 1" is odd days that are Mondays', () => {
    expect(firesAfter('0 0 */2 * 1', JAN_2027, 3)).toEqual([
      '2027-01-11T00:00:00.000Z',
      '2027-01-25T00:00:00.000Z',
      '2027-02-01T00:00:00.000Z',
    ]);
  });

  it('"0 0 1 * */2" is a 1st that falls on Sunday, Tuesday, Thursday or Saturday', () => {
    expect(firesAfter('0 0 1 * */2', JAN_2027, 3)).toEqual([
      '2027-04-01T00:00:00.000Z',
      '2027-05-01T00:00:00.000Z',
      '2027-06-01T00:00:00.000Z',
    ]);
  });

  it('a day of week field listing every day but not starting with * still makes either field enough', () => {
    expect(firesAfter('0 0 13 * 0-6', JAN_2027, 2)).toEqual([
      '2027-01-02T00:00:00.000Z',
      '2027-01-03T00:00:00.000Z',
    ]);
  });

  it.each([
    ['*/15 * * * *', ['00:15', '00:30', '00:45', '01:00']],
    ['5/20 * * * *', ['00:05', '00:25', '00:45', '01:05']],
    ['0 1-5/2 * * *', ['01:00', '03:00', '05:00', '01:00']],
    ['0-59/30 * * * *', ['00:30', '01:00', '01:30', '02:00']],
    ['0,10-12,50/5 * * * *', ['00:10', '00:11', '00:12', '00:50']],
    // A step wider than its range keeps the range's first value (croner itself would refuse it).
    ['*/100 * * * *', ['01:00', '02:00', '03:00', '04:00']],
    ['00 05 * * *', ['05:00', '05:00', '05:00', '05:00']],
  ])('steps, ranges and lists: "%s" fires at %j', (text, times) => {
    expect(firesAfter(text, JAN_2027, 4).map((iso) => iso.slice(11, 16))).toEqual(times);
  });

  it('"a/n" in the day of month runs to the 31st: "0 0 1/10 * *" fires on the 1st, 11th, 21st and 31st', () => {
    expect(firesAfter('0 0 1/10 * *', JAN_2027, 4)).toEqual([
      '2027-01-11T00:00:00.000Z',
      '2027-01-21T00:00:00.000Z',
      '2027-01-31T00:00:00.000Z',
      '2027-02-01T00:00:00.000Z',
    ]);
  });

  it('7 is Sunday as 0 is, alone, in ranges and in "a/n"', () => {
    const sundays = firesAfter('0 0 * * 0', JAN_2027, 3);
    expect(sundays[0]).toBe('2027-01-03T00:00:00.000Z');
    expect(firesAfter('0 0 * * 7', JAN_2027, 3)).toEqual(sundays);
    expect(firesAfter('0 0 * * 5-7', JAN_2027, 3)).toEqual([
      '2027-01-02T00:00:00.000Z',
      '2027-01-03T00:00:00.000Z',
      '2027-01-08T00:00:00.000Z',
    ]);
    expect(firesAfter('0 0 * * 6/1', JAN_2027, 2)).toEqual([
      '2027-01-02T00:00:00.000Z',
      '2027-01-03T00:00:00.000Z',
    ]);
  });

  it('nextAfter is strictly after and latestAtOrBefore includes the time itself', () => {
    const schedule = parseResetSchedule('30 2 * * *', JAN_2027);
    expect(schedule.nextAfter(at('2027-03-28T02:29:59.999Z')).toISOString()).toBe('2027-03-28T02:30:00.000Z');
    expect(schedule.nextAfter(at('2027-03-28T02:30:00Z')).toISOString()).toBe('2027-03-29T02:30:00.000Z');
    expect(schedule.latestAtOrBefore(at('2027-03-28T02:30:00Z'))?.toISOString()).toBe(
      '2027-03-28T02:30:00.000Z',
    );
    expect(schedule.latestAtOrBefore(at('2027-03-28T02:29:59.999Z'))?.toISOString()).toBe(
      '2027-03-27T02:30:00.000Z',
    );
  });
});

describe('reset schedule refusals', () => {
  it.each([
    ['0 0 * * MON', /names such as MON or JAN/],
    ['0 0 1 JAN *', /names such as MON or JAN/],
    ['@daily', /Macros such as @daily/],
    ['@weekly', /Macros/],
    ['0 0 0 * * *', /has 6: seconds and year fields are not supported/],
    ['0 0 * *', /exactly five fields.*this one has 4/],
    ['0 0 ? * 1', /"\?" is not supported/],
    ['0 0 L * *', /L and W/],
    ['0 0 15W * *', /L and W/],
    ['0 0 * * 5L', /L and W/],
    ['0 0 * * 5#2', /"#" \(the nth weekday/],
    ['60 0 * * *', /minute 60 is out of range: minutes are 0-59/],
    ['0 24 * * *', /hour 24 is out of range/],
    ['0 0 0 * *', /day of month 0 is out of range/],
    ['0 0 32 * *', /day of month 32 is out of range/],
    ['0 0 * 0 *', /month 0 is out of range/],
    ['0 0 * 13 *', /month 13 is out of range/],
    ['0 0 * * 8', /day of week 8 is out of range: days of week are 0-7/],
    ['0 0 * * 9/2', /day of week 9 is out of range/],
    ['0 22-2 * * *', /hour range 22-2 runs backwards/],
    ['*/0 * * * *', /step \/0 in the minute field must be 1 or more/],
    ['0 0 1,,2 * *', /empty item/],
    ['0 0 1, * *', /empty item/],
    ['0 0 -1 * *', /is not \*, a number or a range/],
    ['*-5 * * * *', /is not \*, a number or a range/],
    ['0  0 * * *', /separated by single spaces/],
    [' 0 0 * * *', /separated by single spaces/],
    ['0 0 * * * ', /separated by single spaces/],
    ['0\t0 * * *', /separated by single spaces/],
    ['', /separated by single spaces/],
    ['0 0 31 2 *', /never fires within 10 years/],
    ['0 0 30 2 *', /never fires within 10 years/],
    ['0 0 31 4,6,9,11 *', /never fires within 10 years/],
    ['0 0 30,31 2 */2', /never fires within 10 years/],
  ])('refuses "%s" with a ResetScheduleError saying what is wrong', (text, message) => {
    const parse = () => parseResetSchedule(text, JAN_2027);
    expect(parse).toThrow(ResetScheduleError);
    expect(parse).toThrow(message);
  });

  it('accepts a February 31st when a day of week also applies, since either day field is enough', () => {
    expect(firesAfter('0 0 31 2 5', JAN_2027, 1)).toEqual(['2027-02-05T00:00:00.000Z']);
  });

  it('judges "never within 10 years" from the given now: Feb 1 on a Monday is refused only across a gap of 11 years', () => {
    // Feb 1 falls on a Monday in 2027 and 2038 and in no year between.
    expect(firesAfter('0 0 */31 2 1', at('2026-06-01T00:00:00Z'), 2)).toEqual([
      '2027-02-01T00:00:00.000Z',
      '2038-02-01T00:00:00.000Z',
    ]);
    expect(() => parseResetSchedule('0 0 */31 2 1', at('2027-06-01T00:00:00Z'))).toThrow(/never fires/);
  });
});

describe('periods', () => {
  const daily = parseResetSchedule('0 0 * * *', JAN_2027);
  // Created between two schedule times.
  const createdAt = at('2027-01-01T10:17:23.456Z');

  const iso = (period: { startedAt: Date; nextResetAt?: Date | null; endedAt?: Date } | null) =>
    period &&
    Object.fromEntries(Object.entries(period).map(([key, value]) => [key, value?.toISOString() ?? null]));

  it('the first period runs from creation to the next schedule time, however short', () => {
    expect(iso(periodAt(daily, createdAt, at('2027-01-01T23:59:59.999Z')))).toEqual({
      startedAt: '2027-01-01T10:17:23.456Z',
      nextResetAt: '2027-01-02T00:00:00.000Z',
    });
  });

  it('at exactly a reset time the new period holds; 1 ms before, the old one', () => {
    expect(iso(periodAt(daily, createdAt, at('2027-01-05T00:00:00Z')))).toEqual({
      startedAt: '2027-01-05T00:00:00.000Z',
      nextResetAt: '2027-01-06T00:00:00.000Z',
    });
    expect(iso(periodAt(daily, createdAt, at('2027-01-04T23:59:59.999Z')))).toEqual({
      startedAt: '2027-01-04T00:00:00.000Z',
      nextResetAt: '2027-01-05T00:00:00.000Z',
    });
  });

  it('long after creation, with some 200,000 resets in between, the current period comes at once', () => {
    const quarterHourly = parseResetSchedule('*/15 * * * *', JAN_2027);
    expect(iso(periodAt(quarterHourly, createdAt, at('2032-09-14T08:44:59.999Z')))).toEqual({
      startedAt: '2032-09-14T08:30:00.000Z',
      nextResetAt: '2032-09-14T08:45:00.000Z',
    });
  });

  it('a schedule time equal to the creation time is not a reset', () => {
    const midnight = at('2027-01-01T00:00:00Z');
    expect(iso(periodAt(daily, midnight, midnight))).toEqual({
      startedAt: '2027-01-01T00:00:00.000Z',
      nextResetAt: '2027-01-02T00:00:00.000Z',
    });
    expect(previousPeriodAt(daily, midnight, midnight)).toBeNull();
  });

  it('a time a little before creation (another clock behind) gets the first period', () => {
    expect(iso(periodAt(daily, createdAt, at('2027-01-01T10:17:23.000Z')))).toEqual({
      startedAt: '2027-01-01T10:17:23.456Z',
      nextResetAt: '2027-01-02T00:00:00.000Z',
    });
  });

  it('without a schedule there is one period forever and never a previous one', () => {
    expect(iso(periodAt(null, createdAt, at('2040-01-01T00:00:00Z')))).toEqual({
      startedAt: '2027-01-01T10:17:23.456Z',
      nextResetAt: null,
    });
    expect(previousPeriodAt(null, createdAt, at('2040-01-01T00:00:00Z'))).toBeNull();
  });

  it('there is no previous period before the first reset', () => {
    expect(previousPeriodAt(daily, createdAt, at('2027-01-01T23:59:59.999Z'))).toBeNull();
  });

  it('from the first reset on, the previous period is the one that ended when the current one started', () => {
    expect(iso(previousPeriodAt(daily, createdAt, at('2027-01-02T00:00:00Z')))).toEqual({
      startedAt: '2027-01-01T10:17:23.456Z',
      endedAt: '2027-01-02T00:00:00.000Z',
    });
    expect(iso(previousPeriodAt(daily, createdAt, at('2027-03-10T13:00:00Z')))).toEqual({
      startedAt: '2027-03-09T00:00:00.000Z',
      endedAt: '2027-03-10T00:00:00.000Z',
    });
  });
});

describe('BoardPeriods', () => {
  /** The daily schedule, counting how often the periods are computed. */
  function countedDaily() {
    const inner = parseResetSchedule('0 0 * * *', JAN_2027);
    const counted = {
      computed: 0,
      text: inner.text,
      nextAfter: (t: Date) => inner.nextAfter(t),
      latestAtOrBefore: (t: Date) => {
        counted.computed++;
        return inner.latestAtOrBefore(t);
      },
    } satisfies ResetSchedule & { computed: number };
    return counted;
  }
  const createdAt = at('2027-01-01T10:00:00Z');

  it('recomputes only when a time passes the cached next reset', () => {
    const schedule = countedDaily();
    const periods = new BoardPeriods(schedule, createdAt);
    expect(periods.at(at('2027-01-03T01:00:00Z')).startedAt.toISOString()).toBe('2027-01-03T00:00:00.000Z');
    periods.at(at('2027-01-03T12:00:00Z'));
    periods.at(at('2027-01-03T23:59:59.999Z'));
    expect(schedule.computed).toBe(1);
    expect(periods.at(at('2027-01-04T00:00:00Z')).startedAt.toISOString()).toBe('2027-01-04T00:00:00.000Z');
    expect(schedule.computed).toBe(2);
  });

  it('answers a time before its cached period with that earlier period, and keeps the newer one cached', () => {
    const schedule = countedDaily();
    const periods = new BoardPeriods(schedule, createdAt);
    periods.at(at('2027-01-04T00:00:00Z'));
    const late = periods.at(at('2027-01-03T23:59:59.999Z'));
    expect(late.startedAt.toISOString()).toBe('2027-01-03T00:00:00.000Z');
    expect(late.nextResetAt?.toISOString()).toBe('2027-01-04T00:00:00.000Z');
    expect(periods.at(at('2027-01-01T10:00:00Z')).startedAt.toISOString()).toBe('2027-01-01T10:00:00.000Z');
    const computed = schedule.computed;
    expect(periods.at(at('2027-01-04T08:00:00Z')).startedAt.toISOString()).toBe('2027-01-04T00:00:00.000Z');
    expect(schedule.computed).toBe(computed);
  });

  it('without a schedule answers the one period for any time', () => {
    const periods = new BoardPeriods(null, createdAt);
    expect(periods.at(at('2030-01-01T00:00:00Z'))).toEqual({ startedAt: createdAt, nextResetAt: null });
  });
});
