import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/** The SQL of boards (migration 0033): settings fixed at creation, `ref` naming this incarnation. */

export interface BoardRow {
  id: string;
  ref: string;
  sort: 'asc' | 'desc';
  operator: 'best' | 'set' | 'incr';
  reset_schedule: string | null;
  authoritative: boolean;
  metadata: Record<string, unknown>;
  created_at: Date;
}

const COLUMNS = 'id, ref, sort, operator, reset_schedule, authoritative, metadata, created_at';

export interface NewBoard {
  id: string;
  ref: string;
  sort: string;
  operator: string;
  resetSchedule: string | null;
  authoritative: boolean;
  metadataJson: string;
  createdAt: Date;
}

const INSERT_SQL = namedSql<NewBoard>(`
  insert into leaderboards (id, ref, sort, operator, reset_schedule, authoritative, metadata, created_at)
  values (:id, :ref, :sort, :operator, :resetSchedule, :authoritative, :metadataJson::jsonb, :createdAt)
  on conflict (id) do nothing
  returning ${COLUMNS}`);

/** Creates the board; undefined when the id is in use. */
export async function insertBoard(data: DataAccess, board: NewBoard): Promise<BoardRow | undefined> {
  const [row] = await executeNamed<BoardRow, NewBoard>(data, INSERT_SQL, {
    ...board,
    // A null parameter must be bound, not missing (namedSql refuses undefined).
    resetSchedule: board.resetSchedule,
  });
  return row;
}

const FIND_SQL = `select ${COLUMNS} from leaderboards where id = $1`;

export async function findBoard(data: DataAccess, id: string): Promise<BoardRow | undefined> {
  const [row] = await executeBound<BoardRow>(data, FIND_SQL, [id]);
  return row;
}

const DELETE_SQL = `delete from leaderboards where id = $1 returning ${COLUMNS}`;

export async function deleteBoard(data: DataAccess, id: string): Promise<BoardRow | undefined> {
  const [row] = await executeBound<BoardRow>(data, DELETE_SQL, [id]);
  return row;
}

const PAGE_SQL = `select ${COLUMNS} from leaderboards where ($1::text is null or id > $1) order by id limit $2`;

/** Boards by id after `after`, at most `count`. */
export async function boardsPage(data: DataAccess, after: string | null, count: number): Promise<BoardRow[]> {
  return executeBound<BoardRow>(data, PAGE_SQL, [after, count]);
}

const PERIODS_SQL = 'select distinct period_start from leaderboard_records where standings_ref = $1';

/** The periods some standings hold records in (a deleted board's rank indexes to drop). */
export async function periodsWithRecords(data: DataAccess, ref: string): Promise<Date[]> {
  const rows = await executeBound<{ period_start: Date }>(data, PERIODS_SQL, [ref]);
  return rows.map((row) => row.period_start);
}
