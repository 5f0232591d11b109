import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import {
  type ModerationReport,
  REPORT_REASON_MAX,
  REPORT_TEXT_MAX,
  type Report,
  type ReportState,
} from '../../../protocol/moderation.js';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import type { Outbox } from '../../platform/outbox.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import { trimmedText } from '../../platform/trimmed-text.js';
import type { AuditApi } from '../audit/index.js';
import type { ChatApi, MessageTargetRow } from '../chat/index.js';
import type { GroupsApi } from '../groups/index.js';
import type { NotificationRequest, NotificationsApi } from '../notifications/index.js';
import type { PartiesApi } from '../parties/index.js';
import type { WorldsApi } from '../worlds/index.js';
import {
  closeReport,
  insertReport,
  type NewReportRow,
  type ReportRow,
  reportById,
  reportedMessage,
  reportsIn,
} from './reports.repository.js';

export interface ModerationDeps {
  worlds: Pick<WorldsApi, 'readable'>;
  groups: Pick<GroupsApi, 'memberOf'>;
  parties: Pick<PartiesApi, 'partyOf'>;
  /** The reported messages: who may see one, and its deletion by a moderator's decision. */
  messages: Pick<ChatApi, 'messageTarget' | 'deleteMessage'>;
  /** Reports per user and window, shared by the nodes through Redis: each one lands in a moderator's queue. */
  reportLimiter: RateLimiterAbstract;
  /** Every decision is recorded in the audit log, in its transaction. */
  audit: AuditApi;
  /** The inbox: a decision notifies the reporter, in its transaction. */
  notifications: Pick<NotificationsApi, 'store' | 'announce'>;
  /** `report.created` is recorded with the report, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'record'>;
}

type Page = { limit: number; cursor?: string | undefined };
type Decision = {
  state: Exclude<ReportState, 'open'>;
  note?: string | undefined;
  delete_message?: boolean | undefined;
};

const REPORT_CREATED = 'report.created';

const noSuchMessage = () => new AppError(ErrorCode.NOT_FOUND, 'No such message.');
const noSuchReport = () => new AppError(ErrorCode.NOT_FOUND, 'No such report.');
/** Moderators and admins (roles of the access token, as login granted them) work on reports. */
const MODERATORS_ONLY = 'Only moderators can work on reports.';
const iso = (date: Date | null) => (date === null ? null : new Date(date).toISOString());

const toReport = (row: NewReportRow): Report => ({
  id: row.id,
  message_id: row.message_id,
  state: row.state,
  reason: row.reason,
  details: row.details,
  created_at: new Date(row.created_at).toISOString(),
});

/**
 * The inbox's word to the reporter of a decided report (docs/notifications.md): what became of it,
 * never who decided nor their note.
 */
const decidedNote = (
  to: string,
  report: { id: string; message_id: string | null },
  state: Decision['state'],
): NotificationRequest => ({
  userId: to,
  code: 'report.resolved',
  subject: `A moderator ${state} your report`,
  content: { report_id: report.id, message_id: report.message_id, state },
  senderId: null,
});

const toModerationReport = (row: ReportRow): ModerationReport => ({
  ...toReport(row),
  reporter_id: row.reporter_id,
  moderator_id: row.moderator_id,
  note: row.note,
  resolved_at: iso(row.resolved_at),
  message:
    row.message_id === null || row.m_created_at === null
      ? null
      : {
          id: row.message_id,
          sender_id: row.m_sender_id,
          body: row.m_body ?? '',
          created_at: new Date(row.m_created_at).toISOString(),
          conversation_id: row.m_conversation_id,
          world_id: row.m_world_id,
          room_id: row.m_room_id,
          group_id: row.m_group_id,
          party_id: row.m_party_id,
        },
});

/**
 * Reports of messages and their moderation (docs/moderation.md). A message is reported only by
 * someone who can see it, and a message they cannot see answers 404 like one that does not exist,
 * so reports reveal nothing of private worlds or other people's conversations.
 */
export class ModerationService {
  constructor(private readonly deps: ModerationDeps) {}

  async report(
    ctx: Ctx,
    messageId: string,
    input: { reason: string; details?: string | undefined },
  ): Promise<Report> {
    const me = callerOf(ctx).id;
    const reason = trimmedText(input.reason, { path: 'reason', max: REPORT_REASON_MAX });
    const details = trimmedText(input.details, { path: 'details', max: REPORT_TEXT_MAX, optional: true });
    if (!isId(messageId)) throw noSuchMessage();
    await consumeOrThrow(this.deps.reportLimiter, me, 'Too many reports; wait before reporting more.');
    const id = canonicalId(messageId);
    const message = await this.deps.messages.messageTarget(ctx.data, id);
    if (!message || !(await this.canSee(ctx, me, message))) throw noSuchMessage();
    if (message.sender_id === me) {
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'You cannot report your own message.', {
        errors: [{ path: 'message_id', message: "must be another user's message" }],
      });
    }
    const report = { id: newId(), messageId: id, reporterId: me, reason, details, at: ctx.now() };
    try {
      const row = this.deps.outbox.hasConsumers(REPORT_CREATED)
        ? await transaction(ctx.data, async (tx) => {
            const inserted = await insertReport(tx, report);
            await this.recordCreated(tx, inserted, me, id);
            return inserted;
          })
        : await insertReport(ctx.data, report);
      return toReport(row);
    } catch (error) {
      // Checked by the constraint rather than a read first, so two reports sent at once still make one.
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION))
        throw new AppError(ErrorCode.CONFLICT, 'You already reported this message.');
      // The message was deleted (or the reporter's account) since it was read.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw noSuchMessage();
      throw error;
    }
  }

  /**
   * Records `report.created` in the report's transaction `tx`, with the message as it stands then:
   * the report's foreign key holds the message's row until the commit, so it is there to read.
   */
  private async recordCreated(
    tx: DataAccess,
    row: NewReportRow,
    reporterId: string,
    messageId: string,
  ): Promise<void> {
    const message = await reportedMessage(tx, messageId);
    if (!message) throw noSuchMessage();
    const event: DomainEventData[typeof REPORT_CREATED] = {
      report: { ...toReport(row), reporter_id: reporterId },
      message: {
        id: messageId,
        sender_id: message.sender_id,
        body: message.body,
        created_at: new Date(message.created_at).toISOString(),
      },
    };
    await this.deps.outbox.record(tx, REPORT_CREATED, event);
  }

  async list(ctx: Ctx, state: ReportState, page: Page) {
    requireRole(ctx, 'moderator', MODERATORS_ONLY);
    const after = decodeCursor(page.cursor, isTimeIdKey);
    const rows = await reportsIn(ctx.data, state, { after, limit: page.limit + 1 });
    return pageFrom(rows, page.limit, toModerationReport, (row) => [row.created_key, row.id]);
  }

  /** Resolves or dismisses an open report, deleting its message in the same transaction when asked. */
  async decide(ctx: Ctx, reportId: string, decision: Decision): Promise<ModerationReport> {
    const moderator = requireRole(ctx, 'moderator', MODERATORS_ONLY);
    const note = trimmedText(decision.note, { path: 'note', max: REPORT_TEXT_MAX, optional: true });
    if (!isId(reportId)) throw noSuchReport();
    const id = canonicalId(reportId);
    const { row, notes } = await transaction(ctx.data, async (tx) => {
      const at = ctx.now();
      const closed = await closeReport(tx, {
        id,
        state: decision.state,
        moderatorId: moderator.id,
        note,
        at,
      });
      if (!closed) {
        if (await reportById(tx, id))
          throw new AppError(ErrorCode.CONFLICT, 'This report was already resolved or dismissed.');
        throw noSuchReport();
      }
      const deleteMessage = decision.delete_message === true && closed.message_id !== null;
      if (deleteMessage) await this.deps.messages.deleteMessage(tx, closed.message_id as string);
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: moderator.id },
        action: decision.state === 'resolved' ? 'moderation.reports.resolve' : 'moderation.reports.dismiss',
        target: { type: 'report', id },
        before: { state: 'open', message_id: closed.message_id },
        after: { state: decision.state, note, message_deleted: deleteMessage },
      });
      // The reporter learns which message they reported even when this decision deleted it; a
      // reporter whose account is gone is told nothing.
      const decided =
        closed.reporter_id === null
          ? []
          : await this.deps.notifications.store(
              tx,
              [decidedNote(closed.reporter_id, { id, message_id: closed.message_id }, decision.state)],
              at,
            );
      return { row: await reportById(tx, id), notes: decided };
    });
    await this.deps.notifications.announce(notes, ctx.log);
    if (!row) throw noSuchReport();
    return toModerationReport(row);
  }

  /**
   * A conversation's message is seen by its two users, a world's by whoever may read the world, a
   * group's and a party's by their members.
   */
  private async canSee(ctx: Ctx, me: string, message: MessageTargetRow): Promise<boolean> {
    const { world_id, group_id, party_id } = message;
    if (party_id !== null) return (await this.deps.parties.partyOf(ctx.data, me))?.id === party_id;
    if (world_id === null && group_id === null) return message.user_a_id === me || message.user_b_id === me;
    try {
      if (world_id !== null) await this.deps.worlds.readable(ctx, world_id);
      else if (group_id !== null) await this.deps.groups.memberOf(ctx, group_id);
      return true;
    } catch (error) {
      if (
        error instanceof AppError &&
        (error.code === ErrorCode.NOT_FOUND || error.code === ErrorCode.FORBIDDEN)
      )
        return false;
      throw error;
    }
  }
}
