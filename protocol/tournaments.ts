import { z } from 'zod';
import {
  metadataSchema,
  operatorSchema,
  recordSchema,
  recordsQuery,
  sortSchema,
  standingsId,
  submissionFields,
  userId,
} from './leaderboards.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * Tournaments (docs/leaderboards.md, "Tournaments"): one period of standings between `start_at`
 * and `end_at`, with a size cap and joining, whose state follows from the clock at each answer.
 */

const tag = 'leaderboards';

export const TOURNAMENT_MAX_SIZE = 1_000_000;

export const tournamentStateSchema = z.enum(['upcoming', 'active', 'ended']);

export const tournamentSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string(),
    sort: sortSchema,
    operator: operatorSchema,
    start_at: z.string(),
    end_at: z.string(),
    max_size: z.number().int().nullable(),
    join_required: z.boolean(),
    authoritative: z.boolean(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    size: z.number().int(),
    state: tournamentStateSchema,
  })
  .meta({ id: 'Tournament' });

export const tournamentRecordSchema = recordSchema
  .omit({ leaderboard_id: true })
  .extend({ tournament_id: z.string() })
  .meta({ id: 'TournamentRecord' });

/** A title counts its characters after trimming, and is stored trimmed. */
const title = text(1, 100 + 2000)
  .transform((value) => value.trim())
  .pipe(text(1, 100));

const isoTime = z.iso.datetime({ offset: true }).describe('ISO-8601 with an offset; answered in UTC (Z).');
const tournamentPath = { tournament_id: standingsId };

export const tournamentsCreate = operation('tournaments.admin.create', {
  tag,
  summary:
    'Admins: create a tournament: `start_at` < `end_at`, `end_at` in the future, both at most 10 years ahead; a `start_at` in the past makes it active at once. An id in use answers 409 CONFLICT. Audited as tournaments.create.',
  rest: { method: 'POST', path: '/api/admin/tournaments', status: 201 },
  request: z
    .object({
      id: standingsId,
      title,
      description: text(0, 1000).optional(),
      sort: sortSchema.optional(),
      operator: operatorSchema.optional(),
      start_at: isoTime,
      end_at: isoTime,
      max_size: z.number().int().min(1).max(TOURNAMENT_MAX_SIZE).nullable().optional(),
      join_required: z.boolean().optional(),
      authoritative: z.boolean().optional(),
      metadata: metadataSchema.optional(),
    })
    .strict(),
  response: tournamentSchema,
  errors: [401, 403, 409, 422],
});

export const tournamentsDelete = operation('tournaments.admin.delete', {
  tag,
  summary: 'Admins: delete a tournament with its participants and records. Audited as tournaments.delete.',
  rest: { method: 'DELETE', path: '/api/admin/tournaments/:tournament_id', status: 204 },
  request: z.object(tournamentPath).strict(),
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const tournamentsList = operation('tournaments.list', {
  tag,
  summary:
    'Tournaments: upcoming and active ones by (start_at, id) ascending, ended ones by (end_at, id) descending; without `state`, all by (start_at, id). The state is the one at the time of each page.',
  rest: { method: 'GET', path: '/api/tournaments' },
  request: z.object({ state: tournamentStateSchema.optional(), ...listQuery }).strict(),
  response: pageOf(tournamentSchema),
  errors: [401, 422],
});

export const tournamentsGet = operation('tournaments.get', {
  tag,
  summary: 'One tournament, with its size and its state now.',
  rest: { method: 'GET', path: '/api/tournaments/:tournament_id' },
  request: z.object(tournamentPath).strict(),
  response: tournamentSchema,
  errors: [401, 404, 422],
});

export const tournamentsJoin = operation('tournaments.join', {
  tag,
  summary:
    'Join a tournament while it is upcoming or active (after its end 409 TOURNAMENT_CLOSED; full 409 TOURNAMENT_FULL with max_size). Joining again answers the same joined_at.',
  rest: { method: 'POST', path: '/api/tournaments/:tournament_id/join' },
  request: z.object(tournamentPath).strict(),
  response: z.object({ tournament_id: z.string(), user_id: z.string(), joined_at: z.string() }),
  errors: [401, 404, 409, 422],
});

export const tournamentsSubmit = operation('tournaments.records.submit', {
  tag,
  summary:
    "Submit the caller's score while the tournament is active (else 409 TOURNAMENT_CLOSED with state, start_at and end_at), as a participant (403 NOT_JOINED; without join_required the first submission joins).",
  rest: { method: 'POST', path: '/api/tournaments/:tournament_id/records' },
  request: z.object({ ...tournamentPath, ...submissionFields }).strict(),
  response: tournamentRecordSchema,
  errors: [401, 403, 404, 409, 422, 429],
});

export const tournamentsRecords = operation('tournaments.records.list', {
  tag,
  summary:
    "A tournament's standings with exact ranks, with a board's read options (`around_user_id`, `around=me`, `user_ids`, `friends`); final from end_at on.",
  rest: { method: 'GET', path: '/api/tournaments/:tournament_id/records' },
  request: z.object({ ...tournamentPath, ...recordsQuery }).strict(),
  response: pageOf(tournamentRecordSchema),
  errors: [401, 404, 422],
});

export const tournamentsRecord = operation('tournaments.records.get', {
  tag,
  summary: "One user's record in a tournament, with its rank; none answers 404.",
  rest: { method: 'GET', path: '/api/tournaments/:tournament_id/records/:user_id' },
  request: z.object({ ...tournamentPath, user_id: userId }).strict(),
  response: tournamentRecordSchema,
  errors: [401, 404, 422],
});

export const internalTournamentsSubmit = operation('internal.tournaments.records.submit', {
  tag,
  summary:
    "Game servers: submit a user's score to any tournament (authoritative or not), with its window and join rules; no rate limit.",
  rest: { method: 'POST', path: '/internal/tournaments/:tournament_id/records' },
  gameServer: true,
  request: z.object({ ...tournamentPath, user_id: userId, ...submissionFields }).strict(),
  response: tournamentRecordSchema,
  errors: [401, 403, 404, 409, 422],
});

export const tournamentOperations = [
  tournamentsCreate,
  tournamentsDelete,
  tournamentsList,
  tournamentsGet,
  tournamentsJoin,
  tournamentsSubmit,
  tournamentsRecords,
  tournamentsRecord,
  internalTournamentsSubmit,
] as const;
