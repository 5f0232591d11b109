import { randomUUID } from 'node:crypto';
import { configFrom } from '../../src/config.js';
import { insertBoard } from '../../src/modules/leaderboards/boards.repository.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { migrateUp } from '../../src/platform/migrate.js';
import type { Backend } from '../backends.js';
import { pgbenchUuid, userIdOf } from '../chat/ceiling.js';
import { progress } from '../realtime/progress.js';
import { scoreSql } from './scores.js';

/**
 * The leaderboards benchmark's database, written with SQL before the service starts: RECORDS
 * users numbered from 1 (ids as bench/chat/ceiling.ts spells them), a `desc` / `best` board made
 * by the product's insertBoard, and one record per user in its one period, as a first submission
 * leaves it: score scoreOf(n) (scores.ts), subscore 0, updated_at n ms after the period's start
 * (the period starts when the board was created, a day ago). On Postgres a second board holds a copy of the same
 * records: the bare submissions' own (they may not touch the service's rows behind its index).
 * Then VACUUM ANALYZE, and the answers the checks expect: the top page and the page around the user in
 * the middle, read by SQL in the standings' order.
 */

/** Records of the board, on both backends: the embedded one seeds them in about a minute too. */
export const RECORDS = 1_000_000;
export const LIMIT = 50;
export const BOARD = 'bench';
const CEILING_BOARD = 'bench-ceiling';

export interface LeaderboardSeed {
  prefix: string;
  idOf: (n: number) => string;
  records: number;
  periodStart: Date;
  ref: string;
  /** Postgres only: the copy the bare submissions write. */
  ceilingRef?: string;
  /** User ids of ranks 1..LIMIT. */
  top: string[];
  /** The user at rank `middle.rank` (records / 2), and the ids of their around page from `middle.first`. */
  middle: { id: string; rank: number; first: number; page: string[] };
  seconds: { users: number; records: number };
}

const RANK_ORDER = 'rank_score, rank_subscore, updated_at, user_id';

export async function seedLeaderboard(
  env: Record<string, string>,
  backend: Backend,
  prefix: string,
): Promise<LeaderboardSeed> {
  const config = configFrom({ ...env, DATABASE_QUERY_TIMEOUT_MS: '0' });
  const db = await openDatabase(config);
  const uuid = (column: string) => pgbenchUuid(prefix, 'n').replace(':n', column);
  // A whole millisecond, as the service's clock gives: the period starts at the board's creation.
  const periodStart = new Date(Math.floor(Date.now() / 1000) * 1000 - 86_400_000);
  try {
    await migrateUp(db, config.DATABASE_URL);
    const sql = (text: string, params: unknown[] = []) =>
      executeBound<Record<string, unknown>>(db.data, text, params);
    const timed = async (label: string, text: string, params: unknown[]) => {
      const started = performance.now();
      await sql(text, params);
      const seconds = (performance.now() - started) / 1000;
      progress(`${backend}: seed: ${label} in ${seconds.toFixed(1)} s`);
      return seconds;
    };
    const board = async (id: string) => {
      const ref = randomUUID();
      await insertBoard(db.data, {
        id,
        ref,
        sort: 'desc',
        operator: 'best',
        resetSchedule: null,
        authoritative: false,
        metadataJson: '{}',
        createdAt: periodStart,
      });
      return ref;
    };
    const users = await timed(
      `${RECORDS} users`,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       select ${uuid('n')}, 'bench_' || n, '!', now(), now() from generate_series(1, $1::int) n`,
      [RECORDS],
    );
    const ref = await board(BOARD);
    const recordsSeconds = await timed(
      `${RECORDS} records`,
      `insert into leaderboard_records (standings_ref, period_start, user_id, score, subscore, rank_score,
         rank_subscore, num_submissions, metadata, created_at, updated_at)
       select $1, $2, ${uuid('n')}, s, 0, -s, 0, 1, '{}', t, t
       from generate_series(1, $3::int) n,
         lateral (select ${scoreSql('n')} as s, $2::timestamptz + n * interval '1 millisecond' as t) x`,
      [ref, periodStart, RECORDS],
    );
    let ceilingRef: string | undefined;
    if (backend === 'postgres') {
      ceilingRef = await board(CEILING_BOARD);
      await timed(
        `a copy of the ${RECORDS} records for the bare submissions`,
        `insert into leaderboard_records (standings_ref, period_start, user_id, score, subscore, rank_score,
           rank_subscore, num_submissions, metadata, created_at, updated_at)
         select $2, period_start, user_id, score, subscore, rank_score, rank_subscore, num_submissions,
           metadata, created_at, updated_at
         from leaderboard_records where standings_ref = $1`,
        [ref, ceilingRef],
      );
    }
    // VACUUM too: it sets the visibility map the index-only scans need, and autovacuum would
    // otherwise take these million-row inserts on during the measured windows.
    await sql('vacuum analyze');
    const inOrder = async (offset: number) =>
      (
        await sql(
          `select user_id from leaderboard_records where standings_ref = $1 and period_start = $2
           order by ${RANK_ORDER} offset $3 limit $4`,
          [ref, periodStart, offset, LIMIT],
        )
      ).map((row) => row.user_id as string);
    const rank = RECORDS / 2;
    const first = rank - Math.floor((LIMIT - 1) / 2);
    const page = await inOrder(first - 1);
    return {
      prefix,
      idOf: userIdOf(prefix),
      records: RECORDS,
      periodStart,
      ref,
      ...(ceilingRef ? { ceilingRef } : {}),
      top: await inOrder(0),
      middle: { id: page[rank - first] as string, rank, first, page },
      seconds: { users, records: recordsSeconds },
    };
  } finally {
    await db.close();
  }
}
