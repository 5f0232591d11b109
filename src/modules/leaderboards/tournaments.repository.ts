import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/**
 * The SQL of tournaments and their participants (migration 0033). A tournament's records are
 * the records of its `ref` for the period starting at its `start_at` (records.repository.ts).
 */

export interface TournamentRow {
  id: string;
  ref: string;
  title: string;
  description: string;
  sort: 'asc' | 'desc';
  operator: 'best' | 'set' | 'incr';
  start_at: Date;
  end_at: Date;
  max_size: number | null;
  join_required: boolean;
  authoritative: boolean;
  metadata: Record<string, unknown>;
  created_at: Date;
  size: number;
}

const COLUMNS = `id, ref, title, description, sort, operator, start_at, end_at, max_size, join_required,
  authoritative, metadata, created_at, size`;

export interface NewTournament {
  id: string;
  ref: string;
  title: string;
  description: string;
  sort: string;
  operator: string;
  startAt: Date;
  endAt: Date;
  maxSize: number | null;
  joinRequired: boolean;
  authoritative: boolean;
  metadataJson: string;
  createdAt: Date;
}

const INSERT_SQL = namedSql<NewTournament>(`
  insert into tournaments (id, ref, title, description, sort, operator, start_at, end_at, max_size,
    join_required, authoritative, metadata, created_at)
  values (:id, :ref, :title, :description, :sort, :operator, :startAt, :endAt, :maxSize::integer,
    :joinRequired, :authoritative, :metadataJson::jsonb, :createdAt)
  on conflict (id) do nothing
  returning ${COLUMNS}`);

/** Creates the tournament; undefined when the id is in use. */
export async function insertTournament(
  data: DataAccess,
  row: NewTournament,
): Promise<TournamentRow | undefined> {
  const [created] = await executeNamed<TournamentRow, NewTournament>(data, INSERT_SQL, row);
  return created;
}

const FIND_SQL = `select ${COLUMNS} from tournaments where id = $1`;

export async function findTournament(data: DataAccess, id: string): Promise<TournamentRow | undefined> {
  const [row] = await executeBound<TournamentRow>(data, FIND_SQL, [id]);
  return row;
}

const DELETE_SQL = `delete from tournaments where id = $1 returning ${COLUMNS}`;

/** Deletes the tournament (its participants go with it); its records are deleted by the caller. */
export async function deleteTournament(data: DataAccess, id: string): Promise<TournamentRow | undefined> {
  const [row] = await executeBound<TournamentRow>(data, DELETE_SQL, [id]);
  return row;
}

/**
 * The list orders: by (start_at, id) ascending, or ended ones by (end_at, id) descending. $1 and
 * $2 are the previous page's last key (null: the first page), $3 the count, $4 the time of the
 * answer (the state filters' only).
 */
const AFTER_START = '($1::timestamptz is null or (start_at, id) > ($1, $2::text))';
const PAGE_SQL = {
  all: `select ${COLUMNS} from tournaments where ${AFTER_START} order by start_at, id limit $3`,
  upcoming: `select ${COLUMNS} from tournaments where start_at > $4 and ${AFTER_START}
    order by start_at, id limit $3`,
  active: `select ${COLUMNS} from tournaments where start_at <= $4 and end_at > $4 and ${AFTER_START}
    order by start_at, id limit $3`,
  ended: `select ${COLUMNS} from tournaments
    where end_at <= $4 and ($1::timestamptz is null or (end_at, id) < ($1, $2::text))
    order by end_at desc, id desc limit $3`,
};

export type TournamentFilter = keyof typeof PAGE_SQL;

/** A page of tournaments in the filter's order after the key (time, id) of the previous page's last. */
export async function tournamentsPage(
  data: DataAccess,
  filter: TournamentFilter,
  now: Date,
  after: { time: Date; id: string } | undefined,
  count: number,
): Promise<TournamentRow[]> {
  const params = [after?.time ?? null, after?.id ?? null, count];
  return executeBound<TournamentRow>(data, PAGE_SQL[filter], filter === 'all' ? params : [...params, now]);
}

const JOIN_SQL = `
  insert into tournament_members (tournament_ref, user_id, joined_at) values ($1, $2, $3)
  on conflict do nothing
  returning joined_at`;
const GROW_SQL = `
  update tournaments set size = size + 1
  where ref = $1 and (max_size is null or size < max_size)
  returning size`;
const MEMBER_SQL = 'select joined_at from tournament_members where tournament_ref = $1 and user_id = $2';

/**
 * Adds a participant inside the caller's transaction: the join time (the first one for a user
 * who had joined), or 'full' when the size has reached max_size (the caller rolls back). The
 * size update waits for a concurrent join's, so concurrent joins never pass max_size.
 */
export async function joinTournament(
  tx: DataAccess,
  ref: string,
  userId: string,
  at: Date,
): Promise<{ joinedAt: Date; joined: boolean } | 'full'> {
  const [inserted] = await executeBound<{ joined_at: Date }>(tx, JOIN_SQL, [ref, userId, at]);
  if (!inserted) {
    const [member] = await executeBound<{ joined_at: Date }>(tx, MEMBER_SQL, [ref, userId]);
    return { joinedAt: member?.joined_at ?? at, joined: false };
  }
  const grown = await executeBound(tx, GROW_SQL, [ref]);
  return grown.length > 0 ? { joinedAt: inserted.joined_at, joined: true } : 'full';
}

/** When the user joined, undefined when they did not. */
export async function joinedAt(data: DataAccess, ref: string, userId: string): Promise<Date | undefined> {
  const [member] = await executeBound<{ joined_at: Date }>(data, MEMBER_SQL, [ref, userId]);
  return member?.joined_at;
}

export interface EndedTournament {
  id: string;
  ref: string;
  start_at: Date;
  end_at: Date;
}

const PENDING_SQL = `
  select id, ref, start_at, end_at from tournaments
  where ended_event_at is null and end_at <= $1 order by end_at limit $2`;

/** Tournaments that ended by `now` and were not announced yet, oldest end first. */
export async function endedTournaments(
  data: DataAccess,
  now: Date,
  limit: number,
): Promise<EndedTournament[]> {
  return executeBound<EndedTournament>(data, PENDING_SQL, [now, limit]);
}

const CLAIM_SQL = `
  update tournaments set ended_event_at = $2 where ref = $1 and ended_event_at is null returning size`;

/** Marks a tournament's end announced: its size then, or undefined when another node did it. */
export async function claimEndedTournament(
  tx: DataAccess,
  ref: string,
  at: Date,
): Promise<number | undefined> {
  const [row] = await executeBound<{ size: number }>(tx, CLAIM_SQL, [ref, at]);
  return row?.size;
}
