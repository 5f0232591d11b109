import type { ReportState } from '../../../protocol/moderation.js';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';
import { messageSql } from '../chat/index.js';

/**
 * The SQL of message reports (table `message_reports` of migration 0002). A report shows its
 * message as it stands now, read in the same statement through chat's `messageSql`.
 */

export interface ReportRow {
  id: string;
  message_id: string | null;
  reporter_id: string | null;
  moderator_id: string | null;
  state: ReportState;
  reason: string;
  details: string | null;
  note: string | null;
  created_at: Date;
  resolved_at: Date | null;
  /** The row's keyset position: created_at to the microsecond. */
  created_key: string;
  /** The message as it stands now; nulls once it was deleted. */
  m_sender_id: string | null;
  m_body: string | null;
  m_created_at: Date | null;
  m_conversation_id: string | null;
  m_world_id: string | null;
  m_room_id: string | null;
  m_group_id: string | null;
  m_party_id: string | null;
}

type Key = readonly [timeKey: string, id: string] | undefined;

/** What a reporter sees of their report. */
export type NewReportRow = Pick<
  ReportRow,
  'id' | 'message_id' | 'state' | 'reason' | 'details' | 'created_at'
>;

interface NewReport {
  id: string;
  messageId: string;
  reporterId: string;
  reason: string;
  details: string | null;
  at: Date;
}

const INSERT_REPORT = namedSql<NewReport>(
  `insert into message_reports (id, message_id, reporter_id, reason, details, created_at)
   values (:id, :messageId, :reporterId, :reason, :details, :at)
   returning id, message_id, state::text as state, reason, details, created_at`,
);

/** Stores an open report; fails with a unique violation when the reporter already reported the message. */
export async function insertReport(data: DataAccess, report: NewReport): Promise<NewReportRow> {
  const [row] = await executeNamed<NewReportRow, NewReport>(data, INSERT_REPORT, report);
  if (!row) throw new Error('insert returned no row');
  return row;
}

const reportColumns = `r.id, r.message_id, r.reporter_id, r.moderator_id, r.state::text as state, r.reason,
  r.details, r.note, r.created_at, r.resolved_at, ${timeKeySql('r.created_at')} as created_key,
  m.sender_id as m_sender_id, m.body as m_body, m.created_at as m_created_at,
  m.conversation_id as m_conversation_id, m.world_id as m_world_id, m.room_id as m_room_id,
  m.group_id as m_group_id, m.party_id as m_party_id`;

export async function reportById(data: DataAccess, reportId: string): Promise<ReportRow | undefined> {
  const [row] = await executeBound<ReportRow>(
    data,
    `select ${reportColumns}
     from message_reports r left join lateral ${messageSql('r.message_id')} m on true
     where r.id = $1`,
    [reportId],
  );
  return row;
}

/** A page of the reports in `state`, newest first: a range scan of message_reports_queue_idx. */
export function reportsIn(
  data: DataAccess,
  state: ReportState,
  page: { after: Key; limit: number },
): Promise<ReportRow[]> {
  return executeBound<ReportRow>(
    data,
    `select ${reportColumns}
     from message_reports r left join lateral ${messageSql('r.message_id')} m on true
     where r.state = $1::report_state
       and ${beforeTimeIdKey('r.created_at', 'r.id')}
     order by r.created_at desc, r.id desc
     limit $4`,
    [state, ...timeIdKeyParams(page.after), page.limit],
  );
}

/**
 * The reported message as it stands in `data`'s transaction (sender_id, body, created_at), for the
 * `report.created` event; undefined when there is none.
 */
export async function reportedMessage(
  data: DataAccess,
  messageId: string,
): Promise<{ sender_id: string | null; body: string; created_at: Date } | undefined> {
  const [row] = await executeBound<{ sender_id: string | null; body: string; created_at: Date }>(
    data,
    `select m.sender_id, m.body, m.created_at from ${messageSql('$1::uuid')} m`,
    [messageId],
  );
  return row;
}

/**
 * Closes the report if it is still open, in one statement so that two moderators deciding at
 * once cannot both succeed; answers the reported message's id and the reporter's, or undefined
 * when no open report has this id.
 */
export async function closeReport(
  data: DataAccess,
  decision: { id: string; state: ReportState; moderatorId: string; note: string | null; at: Date },
): Promise<{ message_id: string | null; reporter_id: string | null } | undefined> {
  const [row] = await executeBound<{ message_id: string | null; reporter_id: string | null }>(
    data,
    `update message_reports
     set state = $2::report_state, moderator_id = $3, note = $4, resolved_at = $5
     where id = $1 and state = 'open'
     returning message_id, reporter_id`,
    [decision.id, decision.state, decision.moderatorId, decision.note, decision.at],
  );
  return row;
}
