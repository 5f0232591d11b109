import { z } from 'zod';
import { userDocument } from './documents.js';
import { LIST_CURSOR_MAX, listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * Leaderboards (docs/leaderboards.md): boards an admin creates, with one current period that a
 * cron schedule may reset, records per user and period ranked exactly, and reads from the top,
 * around a user, of some users and of a caller's friends. REST only; game servers write
 * authoritative boards through /internal.
 */

const tag = 'leaderboards';

/** A board's or a tournament's id, chosen by the admin. */
export const standingsId = z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must be 1-64 of a-z, 0-9, _ and -');
export const userId = z.string().max(64);
export const LEADERBOARD_METADATA_MAX_BYTES = 2048;
/** The most ids one `user_ids` read names. */
export const MAX_USER_IDS = 100;

/** A score or subscore: a JSON integer held exactly (within ±(2^53-1)). */
export const scoreValue = z
  .number()
  .refine(Number.isSafeInteger, 'must be an integer within ±(2^53-1)')
  .describe('An integer within ±(2^53-1).');

export const metadataSchema = userDocument(z.object({}).catchall(z.unknown()), {
  maxBytes: LEADERBOARD_METADATA_MAX_BYTES,
}).describe(`A JSON object of at most ${LEADERBOARD_METADATA_MAX_BYTES} bytes as compact UTF-8 JSON.`);

export const sortSchema = z.enum(['desc', 'asc']);
export const operatorSchema = z.enum(['best', 'set', 'incr']);

export const boardSchema = z
  .object({
    id: z.string(),
    sort: sortSchema,
    operator: operatorSchema,
    reset_schedule: z.string().nullable(),
    authoritative: z.boolean(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    period_started_at: z.string(),
    next_reset_at: z.string().nullable(),
  })
  .meta({ id: 'Leaderboard' });

export const recordSchema = z
  .object({
    leaderboard_id: z.string(),
    user_id: z.string(),
    username: z.string(),
    score: z.number().int(),
    subscore: z.number().int(),
    num_submissions: z.number().int(),
    rank: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'LeaderboardRecord' });

export const submissionFields = {
  score: scoreValue,
  subscore: scoreValue.optional(),
  metadata: metadataSchema.optional(),
};

/** The read options of a records list (boards and tournaments): one selector at most. */
export const recordsQuery = {
  ...listQuery,
  cursor: z.string().min(1).max(LIST_CURSOR_MAX).optional(),
  around_user_id: userId.optional(),
  around: z.literal('me').optional(),
  user_ids: z
    .string()
    .max(MAX_USER_IDS * 65)
    .optional()
    .describe(`1-${MAX_USER_IDS} comma-separated user ids.`),
  friends: z.literal('true').optional(),
};
export const periodQuery = { period: z.enum(['current', 'previous']).optional() };

export const recordsPageSchema = pageOf(recordSchema).extend({
  period_started_at: z.string().nullable(),
  period_ended_at: z.string().nullable(),
});

const boardPath = { leaderboard_id: standingsId };

export const leaderboardsCreate = operation('leaderboards.admin.create', {
  tag,
  summary:
    'Admins: create a board. Its settings are fixed once created; an id in use answers 409 CONFLICT. Audited as leaderboards.create.',
  rest: { method: 'POST', path: '/api/admin/leaderboards', status: 201 },
  request: z
    .object({
      id: standingsId,
      sort: sortSchema.optional(),
      operator: operatorSchema.optional(),
      reset_schedule: z.string().max(200).nullable().optional(),
      authoritative: z.boolean().optional(),
      metadata: metadataSchema.optional(),
    })
    .strict(),
  response: boardSchema,
  errors: [401, 403, 409, 422],
});

export const leaderboardsDelete = operation('leaderboards.admin.delete', {
  tag,
  summary: 'Admins: delete a board with its records and kept periods. Audited as leaderboards.delete.',
  rest: { method: 'DELETE', path: '/api/admin/leaderboards/:leaderboard_id', status: 204 },
  request: z.object(boardPath).strict(),
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const leaderboardsList = operation('leaderboards.list', {
  tag,
  summary: 'Boards, `id` ascending.',
  rest: { method: 'GET', path: '/api/leaderboards' },
  request: z.object({ ...listQuery }).strict(),
  response: pageOf(boardSchema),
  errors: [401, 422],
});

export const leaderboardsGet = operation('leaderboards.get', {
  tag,
  summary: 'One board, with its current period.',
  rest: { method: 'GET', path: '/api/leaderboards/:leaderboard_id' },
  request: z.object(boardPath).strict(),
  response: boardSchema,
  errors: [401, 404, 422],
});

export const leaderboardsSubmit = operation('leaderboards.records.submit', {
  tag,
  summary:
    "Submit the caller's score to the current period with the board's operator (best, set or incr); answers the record with its exact rank. Authoritative boards answer 403.",
  rest: { method: 'POST', path: '/api/leaderboards/:leaderboard_id/records' },
  request: z.object({ ...boardPath, ...submissionFields }).strict(),
  response: recordSchema,
  errors: [401, 403, 404, 422, 429],
});

export const leaderboardsRecords = operation('leaderboards.records.list', {
  tag,
  summary:
    'Records of the current (or previous) period with exact ranks: from rank 1 (keyset pages), around a user (`around_user_id` or `around=me`), of some users (`user_ids`), or of the caller and their friends (`friends=true`).',
  rest: { method: 'GET', path: '/api/leaderboards/:leaderboard_id/records' },
  request: z.object({ ...boardPath, ...recordsQuery, ...periodQuery }).strict(),
  response: recordsPageSchema,
  errors: [401, 404, 422],
});

export const leaderboardsRecord = operation('leaderboards.records.get', {
  tag,
  summary: "One user's record in the current (or previous) period, with its rank; none answers 404.",
  rest: { method: 'GET', path: '/api/leaderboards/:leaderboard_id/records/:user_id' },
  request: z.object({ ...boardPath, user_id: userId, ...periodQuery }).strict(),
  response: recordSchema,
  errors: [401, 404, 422],
});

export const leaderboardsDeleteMine = operation('leaderboards.records.deleteMine', {
  tag,
  summary:
    "Delete the caller's record in the current period (204 also when there was none); the others move up. Authoritative boards answer 403.",
  rest: { method: 'DELETE', path: '/api/leaderboards/:leaderboard_id/records/me', status: 204 },
  request: z.object(boardPath).strict(),
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const leaderboardsAdminDeleteRecord = operation('leaderboards.admin.deleteRecord', {
  tag,
  summary:
    "Admins: delete a user's record in a board's current period (a cheater's), with the reason; audited as leaderboards.records.delete. 204 also when there was none.",
  rest: { method: 'DELETE', path: '/api/admin/leaderboards/:leaderboard_id/records/:user_id', status: 204 },
  request: z.object({ ...boardPath, user_id: userId, reason: text(1, 500) }).strict(),
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const internalLeaderboardsSubmit = operation('internal.leaderboards.records.submit', {
  tag,
  summary:
    "Game servers: submit a user's score to any board (authoritative or not), with the board's operator; no rate limit.",
  rest: { method: 'POST', path: '/internal/leaderboards/:leaderboard_id/records' },
  gameServer: true,
  request: z.object({ ...boardPath, user_id: userId, ...submissionFields }).strict(),
  response: recordSchema,
  errors: [401, 404, 422],
});

export const internalLeaderboardsDelete = operation('internal.leaderboards.records.delete', {
  tag,
  summary: "Game servers: delete a user's record in a board's current period (204 also when there was none).",
  rest: { method: 'DELETE', path: '/internal/leaderboards/:leaderboard_id/records/:user_id', status: 204 },
  gameServer: true,
  request: z.object({ ...boardPath, user_id: userId }).strict(),
  response: z.null(),
  errors: [401, 404, 422],
});

export const leaderboardOperations = [
  leaderboardsCreate,
  leaderboardsDelete,
  leaderboardsList,
  leaderboardsGet,
  leaderboardsSubmit,
  leaderboardsRecords,
  leaderboardsRecord,
  leaderboardsDeleteMine,
  leaderboardsAdminDeleteRecord,
  internalLeaderboardsSubmit,
  internalLeaderboardsDelete,
] as const;
