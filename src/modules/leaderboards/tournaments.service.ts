import { randomUUID } from 'node:crypto';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import { decodeCursor, encodeCursor } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { AuditApi } from '../audit/index.js';
import { submitRecord } from './guarded.repository.js';
import type { RankIndex } from './rank-index.js';
import { deleteStandings, keyOfRow, type StandingsPeriod } from './records.repository.js';
import type { RecordsQuery, StandingsReader } from './standings.js';
import { StandingsGone, tournamentRecordView } from './standings.js';
import {
  deleteTournament,
  findTournament,
  insertTournament,
  joinedAt,
  joinTournament,
  type TournamentFilter,
  type TournamentRow,
  tournamentsPage,
} from './tournaments.repository.js';
import type { Writer, Writers } from './writers.js';

export interface TournamentsDeps {
  index: RankIndex;
  reader: StandingsReader;
  audit: AuditApi;
  writers: Writers;
  /** Told of each end a write makes owed an event, so every node's scheduler wakes for it. */
  ends: { noted(key: string, endsAt: Date): void };
}

export interface NewTournamentInput {
  id: string;
  title: string;
  description?: string;
  sort?: 'asc' | 'desc';
  operator?: 'best' | 'set' | 'incr';
  start_at: string;
  end_at: string;
  max_size?: number | null;
  join_required?: boolean;
  authoritative?: boolean;
  metadata?: unknown;
}

type State = 'upcoming' | 'active' | 'ended';

const TEN_YEARS_MS = 10 * 365.25 * 24 * 3600 * 1000;

const notFound = (id: string) => new AppError(ErrorCode.NOT_FOUND, `No tournament ${id}.`);
/** A read of a tournament deleted since it was found is answered as if it had been found gone. */
const goneAs = (id: string) => (error: unknown) => {
  throw error instanceof StandingsGone ? notFound(id) : error;
};
const invalid = (path: string, message: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, `${path}: ${message}`, { errors: [{ path, message }] });

export const stateAt = (tournament: Pick<TournamentRow, 'start_at' | 'end_at'>, now: Date): State =>
  now < tournament.start_at ? 'upcoming' : now < tournament.end_at ? 'active' : 'ended';

/** A tournament's one period of standings: its records hang on its ref and its start. */
export const standingsOf = (tournament: Pick<TournamentRow, 'ref' | 'start_at'>): StandingsPeriod => ({
  ref: tournament.ref,
  periodStart: tournament.start_at,
});

/**
 * Tournaments (docs/leaderboards.md, "Tournaments"). Their state follows from the clock at each
 * answer (one time per answer); the submission window is checked at the time the service accepts
 * the submission; joining and the size cap hold under concurrency through the size row's update.
 */
export class TournamentsService {
  constructor(private readonly deps: TournamentsDeps) {}

  async create(ctx: Ctx, input: NewTournamentInput) {
    const now = ctx.now();
    const startAt = new Date(input.start_at);
    const endAt = new Date(input.end_at);
    // The times' rules are the request's validation: 422 before the role's 403.
    if (!(startAt < endAt)) throw invalid('end_at', 'must be after start_at');
    if (!(endAt > now)) throw invalid('end_at', 'must be in the future');
    const horizon = now.getTime() + TEN_YEARS_MS;
    if (startAt.getTime() > horizon) throw invalid('start_at', 'must be at most 10 years ahead');
    if (endAt.getTime() > horizon) throw invalid('end_at', 'must be at most 10 years ahead');
    const caller = requireRole(ctx, 'admin');
    const created = await transaction(ctx.data, async (tx) => {
      const row = await insertTournament(tx, {
        id: input.id,
        ref: randomUUID(),
        title: input.title,
        description: input.description ?? '',
        sort: input.sort ?? 'desc',
        operator: input.operator ?? 'best',
        startAt,
        endAt,
        maxSize: input.max_size ?? null,
        joinRequired: input.join_required ?? true,
        authoritative: input.authoritative ?? false,
        metadataJson: JSON.stringify(input.metadata ?? {}),
        createdAt: now,
      });
      if (!row) return undefined;
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'tournaments.create',
        target: { type: 'tournament', id: row.id },
        before: null,
        after: view(row, now),
      });
      return row;
    });
    if (!created) throw new AppError(ErrorCode.CONFLICT, `A tournament ${input.id} exists already.`);
    this.deps.ends.noted(created.ref, created.end_at);
    return view(created, now);
  }

  async delete(ctx: Ctx, id: string): Promise<void> {
    const caller = requireRole(ctx, 'admin');
    const now = ctx.now();
    const deleted = await transaction(ctx.data, async (tx) => {
      const row = await deleteTournament(tx, id);
      if (!row) return undefined;
      await deleteStandings(tx, row.ref);
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'tournaments.delete',
        target: { type: 'tournament', id: row.id },
        before: view(row, now),
        after: null,
      });
      return row;
    });
    if (!deleted) throw notFound(id);
    await this.deps.index
      .drop([standingsOf(deleted)])
      .catch((error: unknown) =>
        ctx.log.warn({ err: error }, 'a deleted tournament kept its rank index keys'),
      );
  }

  async list(ctx: Ctx, query: { state?: State; limit: number; cursor?: string }) {
    callerOf(ctx);
    const now = ctx.now();
    const filter: TournamentFilter = query.state ?? 'all';
    const key = decodeCursor(query.cursor, isTournamentKey);
    const after = key && { time: new Date(key[0]), id: key[1] };
    const rows = await tournamentsPage(ctx.data, filter, now, after, query.limit + 1);
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    const keyTime = (row: TournamentRow) => (filter === 'ended' ? row.end_at : row.start_at);
    return {
      items: page.map((row) => view(row, now)),
      next_cursor:
        rows.length > query.limit && last ? encodeCursor([keyTime(last).toISOString(), last.id]) : null,
    };
  }

  async get(ctx: Ctx, id: string) {
    callerOf(ctx);
    return view(await this.tournament(ctx, id), ctx.now());
  }

  async join(ctx: Ctx, id: string) {
    const caller = callerOf(ctx);
    const tournament = await this.tournament(ctx, id);
    const now = ctx.now();
    if (stateAt(tournament, now) === 'ended')
      throw closed(tournament, now, 'It ended; nobody joins any more.');
    // A participant joining again is answered as they joined, also when the tournament is full.
    const existing = await joinedAt(ctx.data, tournament.ref, caller.id);
    if (existing) return joinView(tournament, caller.id, existing);
    const joined = await transaction(ctx.data, async (tx) => {
      const outcome = await joinTournament(tx, tournament.ref, caller.id, now);
      if (outcome === 'full') throw full(tournament);
      return outcome.joinedAt;
    });
    return joinView(tournament, caller.id, joined);
  }

  /**
   * A submission, checked in the contract's order: the request (already validated), the
   * tournament, authoritative and the rate (users), the window, the participation (joining on the
   * first submission without join_required), then the operator. A refusal writes nothing: the
   * join a submission makes rolls back with it.
   */
  async submit(
    ctx: Ctx,
    id: string,
    input: { score: number; subscore?: number; metadata?: unknown },
    writer: Writer,
  ) {
    const tournament = await this.tournament(ctx, id);
    const userId = await this.deps.writers.submitter(ctx, writer, tournament.authoritative);
    const now = ctx.now();
    if (stateAt(tournament, now) !== 'active') {
      await this.deps.writers.refund(writer, userId);
      throw closed(tournament, now, 'Submissions are accepted from start_at until end_at.');
    }
    const period = standingsOf(tournament);
    const written = await transaction(ctx.data, async (tx) => {
      if (!(await joinedAt(tx, tournament.ref, userId))) {
        if (tournament.join_required)
          throw new AppError(ErrorCode.NOT_JOINED, 'Join the tournament before submitting to it.');
        if ((await joinTournament(tx, tournament.ref, userId, now)) === 'full') throw full(tournament);
      }
      const submitted = await submitRecord(tx, tournament.operator, {
        ref: tournament.ref,
        periodStart: period.periodStart,
        periodEnd: null,
        userId,
        score: input.score,
        subscore: input.subscore ?? 0,
        metadataJson: input.metadata === undefined ? null : JSON.stringify(input.metadata),
        sign: tournament.sort === 'asc' ? 1 : -1,
        now,
      });
      // Deleted since it was read: answered as if it had been read after.
      if (!submitted) throw notFound(id);
      const record = submitted.value;
      if (!record)
        throw new AppError(
          ErrorCode.SCORE_OUT_OF_RANGE,
          'The sum would leave ±(2^53-1); the record is unchanged.',
        );
      return { record, epoch: submitted.epoch };
    }).catch(async (error: unknown) => {
      await this.deps.writers.refund(writer, userId);
      throw error;
    });
    const { record: row, epoch } = written;
    const applied = await this.deps.index.apply({ ...period, epoch }, userId, row.version, keyOfRow(row));
    return tournamentRecordView(tournament.id)(row, await this.deps.reader.rankOf(ctx, applied, row));
  }

  async records(ctx: Ctx, id: string, query: RecordsQuery) {
    return this.recordsFor(ctx, id, query, callerOf(ctx).id);
  }

  /** A records list for `callerId`, or for server code (no caller: `around=me` and `friends` name no one). */
  async recordsFor(ctx: Ctx, id: string, query: RecordsQuery, callerId: string | null) {
    const tournament = await this.tournament(ctx, id);
    const page = await this.deps.reader
      .page(ctx, standingsOf(tournament), query, callerId, tournamentRecordView(tournament.id))
      .catch(goneAs(id));
    return {
      items: page.items,
      next_cursor: page.next_cursor,
    };
  }

  async record(ctx: Ctx, id: string, userId: string) {
    const caller = callerOf(ctx);
    const tournament = await this.tournament(ctx, id);
    const noRecord = () => new AppError(ErrorCode.NOT_FOUND, 'That user has no record in this tournament.');
    if (!isId(userId)) throw noRecord();
    const page = await this.deps.reader
      .page(
        ctx,
        standingsOf(tournament),
        { limit: 1, user_ids: canonicalId(userId) },
        caller.id,
        tournamentRecordView(tournament.id),
      )
      .catch(goneAs(id));
    const [found] = page.items;
    if (!found) throw noRecord();
    return found;
  }

  private async tournament(ctx: Ctx, id: string): Promise<TournamentRow> {
    const tournament = await findTournament(ctx.data, id);
    if (!tournament) throw notFound(id);
    return tournament;
  }
}

export function view(row: TournamentRow, now: Date) {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    sort: row.sort,
    operator: row.operator,
    start_at: row.start_at.toISOString(),
    end_at: row.end_at.toISOString(),
    max_size: row.max_size,
    join_required: row.join_required,
    authoritative: row.authoritative,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    size: row.size,
    state: stateAt(row, now),
  };
}

const joinView = (tournament: TournamentRow, userId: string, at: Date) => ({
  tournament_id: tournament.id,
  user_id: userId,
  joined_at: at.toISOString(),
});

function closed(tournament: TournamentRow, now: Date, message: string): AppError {
  return new AppError(
    ErrorCode.TOURNAMENT_CLOSED,
    `The tournament is ${stateAt(tournament, now)}. ${message}`,
    {
      details: {
        state: stateAt(tournament, now),
        start_at: tournament.start_at.toISOString(),
        end_at: tournament.end_at.toISOString(),
      },
    },
  );
}

const full = (tournament: TournamentRow) =>
  new AppError(ErrorCode.TOURNAMENT_FULL, `The tournament has its ${tournament.max_size} participants.`, {
    details: { max_size: tournament.max_size },
  });

const TIME_ID = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const TOURNAMENT_ID = /^[a-z0-9_-]{1,64}$/;

/** A tournaments page's key: the last one's start (or end) and id. */
const isTournamentKey = (value: unknown): value is [string, string] =>
  Array.isArray(value) &&
  value.length === 2 &&
  typeof value[0] === 'string' &&
  TIME_ID.test(value[0]) &&
  !Number.isNaN(Date.parse(value[0])) &&
  typeof value[1] === 'string' &&
  TOURNAMENT_ID.test(value[1]);
