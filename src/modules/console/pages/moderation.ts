import { type ModerationReport, reportsList, reportsUpdate } from '../../../../protocol/moderation.js';
import { html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  field,
  nextPage,
  type PageContext,
  postForm,
  problemBox,
  select,
  when,
} from '../page.js';

const PATH = '/console/moderation';
const STATES = ['open', 'resolved', 'dismissed'];
const PAGE_SIZE = 20;

/** The report queue: each report with its message where it was said, and the decision forms. */
export const moderationPage: ConsolePage = {
  path: PATH,
  title: 'Moderation queue',
  role: 'moderator',
  async render(ctx) {
    const state = STATES.includes(ctx.query.state ?? '') ? (ctx.query.state as string) : 'open';
    const answer = await ctx.api<{ items: ModerationReport[]; next_cursor: string | null }>(
      apiCall(reportsList, { query: { state, limit: PAGE_SIZE, cursor: ctx.query.cursor } }),
    );
    const filter = html`<form method="get" action="${PATH}" class="filters" aria-label="Filter reports">
${select('state', 'State', STATES, state)}<button type="submit">Show</button></form>`;
    if (!answer.ok) return html`${filter}${problemBox(answer.problem)}`;
    const reports = answer.body.items;
    return html`${filter}
${reports.length === 0 ? html`<p class="empty">No ${state} reports.</p>` : ''}
<ol class="cards">${reports.map((report) => reportCard(ctx, report))}</ol>
${nextPage(PATH, { state }, answer.body.next_cursor)}`;
  },
};

function where(message: NonNullable<ModerationReport['message']>) {
  if (message.conversation_id) return html`direct conversation <code>${message.conversation_id}</code>`;
  if (message.room_id)
    return html`room <code>${message.room_id}</code> of world <code>${message.world_id}</code>`;
  if (message.world_id) return html`world chat of <code>${message.world_id}</code>`;
  return html`group chat of <code>${message.group_id}</code>`;
}

function reportCard(ctx: PageContext, report: ModerationReport) {
  const message = report.message;
  const id = report.id;
  return html`<li><article class="card" aria-labelledby="report-${id}">
<h2 id="report-${id}">${report.reason}</h2>
<p class="meta">Reported ${when(report.created_at)} by <code>${report.reporter_id ?? 'a deleted account'}</code> · ${report.state}</p>
${report.details ? html`<p>${report.details}</p>` : ''}
${
  message
    ? html`<figure class="message"><blockquote>${message.body}</blockquote>
<figcaption>Sent ${when(message.created_at)} by <code>${message.sender_id ?? 'a deleted account'}</code> in ${where(message)}</figcaption></figure>`
    : html`<p class="empty">The message was deleted.</p>`
}
${
  report.state === 'open'
    ? postForm(
        ctx,
        `${PATH}/reports/${segment(id)}`,
        html`${field(`note-${id}`, 'Note (optional)', { name: 'note', max: 2000 })}
<fieldset><legend>Decision</legend>
<label><input type="radio" name="state" value="resolved" checked> Resolve</label>
<label><input type="radio" name="state" value="dismissed"> Dismiss</label>
<label><input type="checkbox" name="delete_message" value="true"${message ? '' : html` disabled`}> Also delete the message</label>
</fieldset>`,
        'Decide',
        { label: `Decide the report ${report.reason}`, progress: 'Deciding…' },
      )
    : html`<p class="meta">${report.state} ${when(report.resolved_at)} by <code>${report.moderator_id ?? '—'}</code>${report.note ? html`: ${report.note}` : ''}</p>`
}
</article></li>`;
}

export const decideReport: ConsoleAction = {
  path: `${PATH}/reports/:report_id`,
  summary: `Resolve or dismiss a report (${routeOf(reportsUpdate)}).`,
  role: 'moderator',
  back: PATH,
  call: (form, params) =>
    apiCall(reportsUpdate, {
      params: { report_id: params.report_id ?? '' },
      body: {
        state: form.state,
        ...(form.note ? { note: form.note } : {}),
        ...(form.delete_message === 'true' ? { delete_message: true } : {}),
      },
    }),
  done: (answer) => {
    const report = answer as ModerationReport;
    return `Report “${report.reason}” ${report.state}${report.message ? '' : '; its message is deleted'}.`;
  },
};
