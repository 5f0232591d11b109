import { timeKeySql, timeOfKey } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { usernameSql } from '../users/index.js';
import type { RankKey } from './rank-key.js';

/**
 * The SQL of records (migration 0033): one row per standings (a board's incarnation or a
 * tournament's), period and user. Rows are ordered by (rank_score, rank_subscore, updated_at,
 * user_id) ascending, the standings' order, which leaderboard_records_rank_idx serves. bigint
 * columns come back as text from node-pg: every reader turns them into numbers (all within ±(2^53-1)).
 */

/** A period of some standings: what every statement here is scoped to. */
export interface StandingsPeriod {
  ref: string;
  periodStart: Date;
  /**
   * The period's rank index epoch when a statement read it with the standings (a submission's,
   * guarded.repository.ts): the rank index's ready check then needs no statement of its own.
   */
  epoch?: number;
}

export interface RecordRow {
  user_id: string;
  username: string;
  score: number;
  subscore: number;
  rank_score: number;
  rank_subscore: number;
  num_submissions: number;
  metadata: Record<string, unknown>;
  /**
   * created_at and updated_at to the microsecond, as text (`timeKeySql`): a page shows them with
   * `timeOfKey`, without parsing a Date per row and writing it back.
   */
  created_key: string;
  updated_key: string;
  version: number;
}

export type RawRecord = Omit<RecordRow, 'score' | 'subscore' | 'rank_score' | 'rank_subscore' | 'version'> & {
  score: string | number;
  subscore: string | number;
  rank_score: string | number;
  rank_subscore: string | number;
  version: string | number;
};

export const COLUMNS = `r.user_id, ${usernameSql('r.user_id')} as username, r.score, r.subscore, r.rank_score,
  r.rank_subscore, r.num_submissions, r.metadata, ${timeKeySql('r.created_at')} as created_key,
  ${timeKeySql('r.updated_at')} as updated_key, r.version`;
/** The names COLUMNS answers, for a statement that selects them from a subquery. */
export const COLUMN_NAMES = `user_id, username, score, subscore, rank_score, rank_subscore, num_submissions, metadata,
  created_key, updated_key, version`;
export const ORDER = 'r.rank_score, r.rank_subscore, r.updated_at, r.user_id';
export const KEY_AFTER = '(r.rank_score, r.rank_subscore, r.updated_at, r.user_id) > ($3, $4, $5, $6)';

export const recordOf = (row: RawRecord): RecordRow => ({
  ...row,
  score: Number(row.score),
  subscore: Number(row.subscore),
  rank_score: Number(row.rank_score),
  rank_subscore: Number(row.rank_subscore),
  version: Number(row.version),
});

export const keyOfRow = (row: RecordRow): RankKey => ({
  rankScore: row.rank_score,
  rankSubscore: row.rank_subscore,
  // The service writes updated_at in milliseconds: the key's time is exact.
  updatedAt: Date.parse(timeOfKey(row.updated_key)),
  userId: row.user_id,
});

export const keyParams = (key: RankKey) => [
  key.rankScore,
  key.rankSubscore,
  new Date(key.updatedAt),
  key.userId,
];

const DELETE_SQL = `
  delete from leaderboard_records
  where standings_ref = $1 and period_start = $2 and user_id = $3
  returning score, subscore, num_submissions, nextval('leaderboard_record_versions') as version`;

export interface DeletedRecord {
  score: number;
  subscore: number;
  num_submissions: number;
  /** The deletion's version, for the rank index. */
  version: number;
}

/** Deletes a user's record; undefined if there was none. */
export async function deleteRecord(
  data: DataAccess,
  period: StandingsPeriod,
  userId: string,
): Promise<DeletedRecord | undefined> {
  const [row] = await executeBound<{
    score: string;
    subscore: string;
    num_submissions: number;
    version: string;
  }>(data, DELETE_SQL, [period.ref, period.periodStart, userId]);
  return (
    row && {
      score: Number(row.score),
      subscore: Number(row.subscore),
      num_submissions: row.num_submissions,
      version: Number(row.version),
    }
  );
}

const BY_USERS_SQL = `
  select ${COLUMNS} from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and r.user_id = any($3::uuid[])
  order by ${ORDER}`;

/** The records of some users (those that have one), in standings order. */
export async function recordsOfUsers(
  data: DataAccess,
  period: StandingsPeriod,
  userIds: readonly string[],
): Promise<RecordRow[]> {
  if (userIds.length === 0) return [];
  const rows = await executeBound<RawRecord>(data, BY_USERS_SQL, [period.ref, period.periodStart, userIds]);
  return rows.map(recordOf);
}

// The standings by SQL alone: what the rank index answers, used while it is not ready.

const COUNT_SQL = `select count(*) as n from leaderboard_records r where r.standings_ref = $1 and r.period_start = $2`;
const COUNT_BEFORE_SQL = `
  select count(*) as n from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2
    and (r.rank_score, r.rank_subscore, r.updated_at, r.user_id) < ($3, $4, $5, $6)`;
// Only the index's columns: an index-only scan steps over the offset without reading a row.
const FROM_POSITION_SQL = `
  select r.rank_score, r.rank_subscore, r.updated_at, r.user_id from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2
  order by ${ORDER} offset $3 limit $4`;
const AFTER_KEY_SQL = `
  select ${COLUMNS} from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and ($3::bigint is null or ${KEY_AFTER})
  order by ${ORDER} limit $7`;

const countOf = (rows: { n: string | number }[]) => Number(rows[0]?.n ?? 0);

export async function countRecords(data: DataAccess, period: StandingsPeriod): Promise<number> {
  return countOf(await executeBound<{ n: string }>(data, COUNT_SQL, [period.ref, period.periodStart]));
}

/** How many records sort before `key`: the 0-based position of a record with that key. */
export async function countBefore(data: DataAccess, period: StandingsPeriod, key: RankKey): Promise<number> {
  return countOf(
    await executeBound<{ n: string }>(data, COUNT_BEFORE_SQL, [
      period.ref,
      period.periodStart,
      ...keyParams(key),
    ]),
  );
}

/** The rank keys at 0-based positions `start`.. (at most `count`), in standings order. */
export async function keysFromPosition(
  data: DataAccess,
  period: StandingsPeriod,
  start: number,
  count: number,
): Promise<RankKey[]> {
  const rows = await executeBound<{
    rank_score: string;
    rank_subscore: string;
    updated_at: Date;
    user_id: string;
  }>(data, FROM_POSITION_SQL, [period.ref, period.periodStart, start, count]);
  return rows.map((row) => ({
    rankScore: Number(row.rank_score),
    rankSubscore: Number(row.rank_subscore),
    updatedAt: row.updated_at.getTime(),
    userId: row.user_id,
  }));
}

/** The first `count` records after `key` (from the top without one), in standings order. */
export async function recordsAfter(
  data: DataAccess,
  period: StandingsPeriod,
  key: RankKey | undefined,
  count: number,
): Promise<RecordRow[]> {
  const rows = await executeBound<RawRecord>(data, AFTER_KEY_SQL, [
    period.ref,
    period.periodStart,
    ...(key ? keyParams(key) : [null, null, null, null]),
    count,
  ]);
  return rows.map(recordOf);
}

const INDEX_BATCH_SQL = `
  select r.user_id, r.rank_score, r.rank_subscore, r.updated_at, r.version from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and ($3::uuid is null or r.user_id > $3)
  order by r.user_id limit $4`;

export interface IndexEntry {
  key: RankKey;
  version: number;
}

/** A batch of the period's records as rank index entries, by user id after `afterUserId`. */
export async function indexEntries(
  data: DataAccess,
  period: StandingsPeriod,
  afterUserId: string | null,
  count: number,
): Promise<IndexEntry[]> {
  const rows = await executeBound<{
    user_id: string;
    rank_score: string;
    rank_subscore: string;
    updated_at: Date;
    version: string;
  }>(data, INDEX_BATCH_SQL, [period.ref, period.periodStart, afterUserId, count]);
  return rows.map((row) => ({
    key: {
      rankScore: Number(row.rank_score),
      rankSubscore: Number(row.rank_subscore),
      updatedAt: row.updated_at.getTime(),
      userId: row.user_id,
    },
    version: Number(row.version),
  }));
}

const EPOCH_SQL = `select index_epoch from leaderboard_periods where standings_ref = $1 and period_start = $2`;

/** The epoch of the period's rank index (0 until something bumped it). */
export async function indexEpoch(data: DataAccess, period: StandingsPeriod): Promise<number> {
  const [row] = await executeBound<{ index_epoch: string }>(data, EPOCH_SQL, [
    period.ref,
    period.periodStart,
  ]);
  return Number(row?.index_epoch ?? 0);
}

const BUMP_EPOCH_SQL = `
  insert into leaderboard_periods as p (standings_ref, period_start, index_epoch) values ($1, $2, 1)
  on conflict (standings_ref, period_start) do update set index_epoch = p.index_epoch + 1`;

/** Marks the period's rank index as possibly behind the records: it is rebuilt before it answers again. */
export async function bumpIndexEpoch(data: DataAccess, period: StandingsPeriod): Promise<void> {
  await executeBound(data, BUMP_EPOCH_SQL, [period.ref, period.periodStart]);
}

const DELETE_STANDINGS_SQL = [
  'delete from leaderboard_records where standings_ref = $1',
  'delete from leaderboard_periods where standings_ref = $1',
];

/** Deletes every record and period of some standings (a deleted board or tournament). */
export async function deleteStandings(data: DataAccess, ref: string): Promise<void> {
  for (const sql of DELETE_STANDINGS_SQL) await executeBound(data, sql, [ref]);
}
