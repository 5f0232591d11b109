import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { shownText } from './text.js';

/**
 * Message reports and their moderation (docs/moderation.md). Any user who can see a message may
 * report it once; moderators (role `moderator` or `admin`) work the queue and resolve or dismiss
 * each report, optionally deleting the message. Reports are REST only: nothing about them needs
 * the socket's latency.
 */

/** The longest reason, counted in characters after trimming. */
export const REPORT_REASON_MAX = 200;
/** The longest details or moderator note, counted in characters after trimming. */
export const REPORT_TEXT_MAX = 2000;
/** Raw text may carry surrounding whitespace; the service trims it and applies the caps above. */
const rawText = (max: number) => shownText(max, { visible: false });

export const reportStateSchema = z.enum(['open', 'resolved', 'dismissed']);
export type ReportState = z.infer<typeof reportStateSchema>;

const id = z.string().max(64);

/** A report as its reporter sees it. */
export const reportSchema = z.object({
  id: z.string(),
  /** Null once the message was deleted; the report stays. */
  message_id: z.string().nullable(),
  state: reportStateSchema,
  reason: z.string(),
  details: z.string().nullable(),
  created_at: z.string(),
});
export type Report = z.infer<typeof reportSchema>;

/** The reported message as it stands now: exactly one of conversation_id, world_id, group_id and party_id is set. */
export const reportedMessageSchema = z.object({
  id: z.string(),
  /** Null once the sender's account was deleted. */
  sender_id: z.string().nullable(),
  body: z.string(),
  created_at: z.string(),
  conversation_id: z.string().nullable(),
  world_id: z.string().nullable(),
  /** Set for a message of one of the world's rooms. */
  room_id: z.string().nullable(),
  group_id: z.string().nullable(),
  party_id: z.string().nullable(),
});

/** A report as moderators see it. */
export const moderationReportSchema = reportSchema.extend({
  /** Null once the reporter's account was deleted. */
  reporter_id: z.string().nullable(),
  /** Who resolved or dismissed it; null while open, and once that account was deleted. */
  moderator_id: z.string().nullable(),
  note: z.string().nullable(),
  resolved_at: z.string().nullable(),
  /** Null once the message was deleted. */
  message: reportedMessageSchema.nullable(),
});
export type ModerationReport = z.infer<typeof moderationReportSchema>;

const tag = 'moderation';

export const reportsCreate = operation('reports.create', {
  tag,
  summary:
    'Report a message the caller can see (reason 1-200 characters after trimming). Once per message and reporter: a second report answers 409; reporting your own message 422. At most REPORT_RATE_LIMIT_COUNT reports per user and window (429).',
  rest: { method: 'POST', path: '/api/chat/messages/:message_id/reports', status: 201 },
  request: z
    .object({
      message_id: id,
      reason: rawText(REPORT_REASON_MAX),
      details: rawText(REPORT_TEXT_MAX).optional(),
    })
    .strict(),
  response: reportSchema,
  errors: [401, 404, 409, 422, 429],
});

export const reportsList = operation('reports.list', {
  tag,
  summary:
    'Moderators: the reports in one state (default open), newest first, each with the reported message as it stands now.',
  rest: { method: 'GET', path: '/api/moderation/reports' },
  request: z.object({ state: reportStateSchema.default('open'), ...listQuery }).strict(),
  response: pageOf(moderationReportSchema),
  errors: [401, 403, 422],
});

export const reportsUpdate = operation('reports.update', {
  tag,
  summary:
    'Moderators: resolve or dismiss an open report, with an optional note; delete_message also deletes the reported message. A report no longer open answers 409.',
  rest: { method: 'PATCH', path: '/api/moderation/reports/:report_id' },
  request: z
    .object({
      report_id: id,
      state: reportStateSchema.exclude(['open']),
      note: rawText(REPORT_TEXT_MAX).optional(),
      delete_message: z.boolean().optional(),
    })
    .strict(),
  response: moderationReportSchema,
  errors: [401, 403, 404, 409, 422],
});

export const moderationOperations = [reportsCreate, reportsList, reportsUpdate] as const;
