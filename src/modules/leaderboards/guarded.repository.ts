import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import type { RankKey } from './rank-key.js';
import {
  COLUMN_NAMES,
  COLUMNS,
  KEY_AFTER,
  keyParams,
  ORDER,
  type RawRecord,
  type RecordRow,
  recordOf,
  type StandingsPeriod,
} from './records.repository.js';

/**
 * The statements a read or a submission starts with (migration 0033). The boards' service keeps
 * their settings in memory (they never change, board-copies.ts), so these statements are what sees
 * that the standings are gone (a board or tournament deleted, on any node) and what reads the
 * period's rank index epoch (bumped at any time): each one answers nothing at all when no board or
 * tournament holds the standings' ref, and the period's epoch with its rows otherwise.
 */

/** What a guarded statement answered for standings that still exist. */
export interface Guarded<T> {
  /** The period's rank index epoch when the statement ran (0 until something bumped it). */
  epoch: number;
  value: T;
}

/** One row when the standings of `ref` exist, holding the epoch of their period `periodStart`. */
const standingSql = (ref: string, periodStart: string) => `
  select coalesce((select p.index_epoch from leaderboard_periods p
      where p.standings_ref = ${ref} and p.period_start = ${periodStart}), 0) as epoch
  where exists (select 1 from leaderboards b where b.ref = ${ref})
    or exists (select 1 from tournaments t where t.ref = ${ref})`;

/**
 * Records selected by `records` (scoped to `$1`, `$2`; COLUMNS and updated_at, which orders them),
 * each row with the epoch, in standings order; one row of nulls but the epoch when there are none,
 * no row when the standings are gone.
 */
const guardedRecords = (records: string) => `
  select s.epoch, ${COLUMN_NAMES.replaceAll(/\w+/g, 'r.$&')} from (${standingSql('$1::uuid', '$2::timestamptz')}) s
  left join (${records}) r on true
  order by ${ORDER}`;

type GuardedRaw = RawRecord & { epoch: string | number };

function guardedRows(rows: GuardedRaw[]): Guarded<RecordRow[]> | undefined {
  const [first] = rows;
  if (!first) return undefined;
  return { epoch: Number(first.epoch), value: first.user_id === null ? [] : rows.map(recordOf) };
}

const BY_USERS_SQL = guardedRecords(`
  select ${COLUMNS}, r.updated_at from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and r.user_id = any($3::uuid[])`);

/** The records of some users (those that have one, none for no ids), in standings order. */
export async function guardedRecordsOfUsers(
  data: DataAccess,
  period: StandingsPeriod,
  userIds: readonly string[],
): Promise<Guarded<RecordRow[]> | undefined> {
  return guardedRows(
    await executeBound<GuardedRaw>(data, BY_USERS_SQL, [period.ref, period.periodStart, userIds]),
  );
}

const AFTER_KEY_SQL = guardedRecords(`
  select ${COLUMNS}, r.updated_at from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and ($3::bigint is null or ${KEY_AFTER})
  order by ${ORDER} limit $7`);

/** The first `count` records after `key` (from the top without one), in standings order. */
export async function guardedRecordsAfter(
  data: DataAccess,
  period: StandingsPeriod,
  key: RankKey | undefined,
  count: number,
): Promise<Guarded<RecordRow[]> | undefined> {
  return guardedRows(
    await executeBound<GuardedRaw>(data, AFTER_KEY_SQL, [
      period.ref,
      period.periodStart,
      ...(key ? keyParams(key) : [null, null, null, null]),
      count,
    ]),
  );
}

const FRIENDS_SQL = guardedRecords(`
  select ${COLUMNS}, r.updated_at from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2
    and r.user_id in (select $7::uuid union all ${'FRIENDS'})
    and ($3::bigint is null or ${KEY_AFTER})
  order by ${ORDER} limit $8`);

export type FriendsPage = (
  data: DataAccess,
  period: StandingsPeriod,
  userId: string,
  after: RankKey | undefined,
  limit: number,
) => Promise<Guarded<RecordRow[]> | undefined>;

/**
 * A page of the records of `userId` and their friends, in standings order after `after`.
 * `friendIdsSql` is social's fragment naming the friends of the user bound at `$7`.
 */
export function friendsPageStatement(friendIdsSql: (user: string) => string): FriendsPage {
  const sql = FRIENDS_SQL.replace('FRIENDS', friendIdsSql('$7::uuid'));
  return async (data, period, userId, after, limit) =>
    guardedRows(
      await executeBound<GuardedRaw>(data, sql, [
        period.ref,
        period.periodStart,
        ...(after ? keyParams(after) : [null, null, null, null]),
        userId,
        limit,
      ]),
    );
}

export interface Submission {
  ref: string;
  periodStart: Date;
  /** The period's end; null for a board without schedule (and a tournament). */
  periodEnd: Date | null;
  userId: string;
  score: number;
  subscore: number;
  /** null: keep the stored metadata (a first submission stores `{}`). */
  metadataJson: string | null;
  /** 1 for a board sorted asc, -1 for desc: rank_score = sign * score. */
  sign: 1 | -1;
  now: Date;
}

/**
 * Every submission first notes its period as one holding records (a no-op after the first), which
 * is what the scheduler reads to find the ended periods it owes a `leaderboard.reset` for. Both
 * writes select from `standing`, so standings that are gone get neither.
 */
const NOTE_PERIOD = `with standing as (${standingSql(':ref::uuid', ':periodStart::timestamptz')}),
  noted as (
    insert into leaderboard_periods (standings_ref, period_start, period_end)
    select :ref, :periodStart, :periodEnd::timestamptz from standing
    on conflict do nothing),
  written as (`;
const INSERT_COLUMNS = `(standings_ref, period_start, user_id, score, subscore, rank_score, rank_subscore,
  num_submissions, metadata, created_at, updated_at)`;
// Casts everywhere: in an INSERT ... SELECT a parameter takes no type from its column.
const INSERT_SELECT = `select :ref, :periodStart, :userId::uuid, :score::bigint, :subscore::bigint,
  :sign::bigint * :score::bigint, :sign::bigint * :subscore::bigint, 1,
  coalesce(:metadataJson::jsonb, '{}'::jsonb), :now::timestamptz, :now::timestamptz from standing`;
const CHANGED = `updated_at = excluded.updated_at, metadata = coalesce(:metadataJson::jsonb, r.metadata),
  version = nextval('leaderboard_record_versions')`;
const ANSWER = `returning ${COLUMNS})
  select s.epoch, w.* from standing s left join written w on true`;

/**
 * Each operator as one statement: concurrent submissions of a user apply one after another on the
 * row. Exported for the leaderboards bench's ceiling, which runs the same statement.
 */
export const SUBMIT_SQL = {
  // The stored record changes only for a strictly better (score, subscore) in the board's order.
  best: namedSql<Submission>(
    `
    ${NOTE_PERIOD}
    insert into leaderboard_records as r ${INSERT_COLUMNS} ${INSERT_SELECT}
    on conflict (standings_ref, period_start, user_id) do update set
      num_submissions = r.num_submissions + 1,
      score = case when better then excluded.score else r.score end,
      subscore = case when better then excluded.subscore else r.subscore end,
      rank_score = case when better then excluded.rank_score else r.rank_score end,
      rank_subscore = case when better then excluded.rank_subscore else r.rank_subscore end,
      updated_at = case when better then excluded.updated_at else r.updated_at end,
      metadata = case when better then coalesce(:metadataJson::jsonb, r.metadata) else r.metadata end,
      version = case when better then nextval('leaderboard_record_versions') else r.version end
    ${ANSWER}`.replaceAll(
      'better',
      '(excluded.rank_score, excluded.rank_subscore) < (r.rank_score, r.rank_subscore)',
    ),
  ),
  set: namedSql<Submission>(`
    ${NOTE_PERIOD}
    insert into leaderboard_records as r ${INSERT_COLUMNS} ${INSERT_SELECT}
    on conflict (standings_ref, period_start, user_id) do update set
      num_submissions = r.num_submissions + 1, score = excluded.score, subscore = excluded.subscore,
      rank_score = excluded.rank_score, rank_subscore = excluded.rank_subscore, ${CHANGED}
    ${ANSWER}`),
  // A sum outside ±(2^53-1) updates nothing: the answer's row has the epoch and no record.
  incr: namedSql<Submission>(`
    ${NOTE_PERIOD}
    insert into leaderboard_records as r ${INSERT_COLUMNS} ${INSERT_SELECT}
    on conflict (standings_ref, period_start, user_id) do update set
      num_submissions = r.num_submissions + 1,
      score = r.score + excluded.score, subscore = r.subscore + excluded.subscore,
      rank_score = :sign::bigint * (r.score + excluded.score),
      rank_subscore = :sign::bigint * (r.subscore + excluded.subscore),
      ${CHANGED}
    where abs(r.score + excluded.score) <= 9007199254740991
      and abs(r.subscore + excluded.subscore) <= 9007199254740991
    ${ANSWER}`),
};

/**
 * Applies a submission with the operator: undefined when the standings are gone (nothing written),
 * else the record, undefined when an `incr` would leave the exact range.
 */
export async function submitRecord(
  data: DataAccess,
  operator: keyof typeof SUBMIT_SQL,
  submission: Submission,
): Promise<Guarded<RecordRow | undefined> | undefined> {
  const rows = await executeNamed<GuardedRaw, Submission>(data, SUBMIT_SQL[operator], submission);
  const answer = guardedRows(rows);
  return answer && { epoch: answer.epoch, value: answer.value[0] };
}
