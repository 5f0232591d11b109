import type { z } from 'zod';
import {
  type boardSchema,
  leaderboardsAdminDeleteRecord,
  leaderboardsCreate,
  leaderboardsDelete,
  leaderboardsGet,
  leaderboardsList,
  leaderboardsRecords,
  operatorSchema,
  type recordSchema,
  type recordsPageSchema,
  sortSchema,
} from '../../../../protocol/leaderboards.js';
import { type Html, html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  field,
  listing,
  nextPage,
  type PageContext,
  postForm,
  problemBox,
  select,
  table,
  when,
} from '../page.js';
import { userLink } from './users.js';

/**
 * Leaderboards for admins: the boards with a creation form, and each board's standings, current
 * or previous period, with a cheater's record deleted for a reason and the board deleted once
 * confirmed. Tournaments (pages/tournaments.ts) share the standings table and the form readers.
 */

type Board = z.infer<typeof boardSchema>;
type RecordsPage = z.infer<typeof recordsPageSchema>;
/** A record of a board or a tournament: what a standings row shows. */
export type StandingsRecord = Pick<
  z.infer<typeof recordSchema>,
  'user_id' | 'username' | 'rank' | 'score' | 'subscore' | 'num_submissions' | 'updated_at'
>;

const PATH = '/console/leaderboards';
export const STANDINGS_PAGE_SIZE = 25;
const PAGE_SIZE = 25;
const boardPath = (boardId: string): `/console${string}` => `${PATH}/${segment(boardId)}`;

export const SORTS: readonly string[] = sortSchema.options;
export const OPERATORS: readonly string[] = operatorSchema.options;
export const ID_HINT = '1-64 of a-z, 0-9, _ and -; fixed once created.';

/** A ticked checkbox of a form: it is sent only when ticked. */
export const ticked = (form: Readonly<Record<string, string>>, name: string) => form[name] === 'yes';

/** The sort and operator selects of a creation form (boards and tournaments alike). */
export function orderFields(prefix: string): Html {
  return html`${select(`${prefix}-sort`, 'Sort (desc: higher is better)', SORTS, 'desc', 'sort')}
${select(`${prefix}-operator`, 'Operator', OPERATORS, 'best', 'operator')}`;
}

/** The standings table: exact ranks as the API answered them, and per record what `action` adds. */
export function standingsTable(
  caption: string,
  records: readonly StandingsRecord[],
  action: (record: StandingsRecord) => Html | string = () => '',
): Html {
  return table(
    caption,
    ['Rank', 'User', 'Score', 'Subscore', 'Submissions', 'Updated', ''],
    records.map(
      (
        record,
      ) => html`<tr><td class="num">${record.rank}</td><td>${userLink(record.user_id, record.username)}</td><td class="num">${record.score}</td>
<td class="num">${record.subscore}</td><td class="num">${record.num_submissions}</td><td>${when(record.updated_at)}</td><td>${action(record)}</td></tr>`,
    ),
  );
}

/** The boards, `id` ascending, and the creation form. */
export const leaderboardsPage: ConsolePage = {
  path: PATH,
  title: 'Leaderboards',
  role: 'admin',
  async render(ctx) {
    const boards = await listing<Board>(ctx, {
      path: PATH,
      filters: html``,
      api: leaderboardsList,
      query: {},
      pageSize: PAGE_SIZE,
      caption: 'Boards by id',
      headings: [
        'Id',
        'Sort',
        'Operator',
        'Reset schedule (UTC)',
        'Authoritative',
        'Period started',
        'Next reset',
      ],
      row: (
        board,
      ) => html`<tr><td><a href="${boardPath(board.id)}"><code>${board.id}</code></a></td><td>${board.sort}</td>
<td>${board.operator}</td><td>${board.reset_schedule ? html`<code>${board.reset_schedule}</code>` : 'never'}</td><td>${board.authoritative ? 'yes' : 'no'}</td>
<td>${when(board.period_started_at)}</td><td>${when(board.next_reset_at)}</td></tr>`,
    });
    return html`${boards}
<h2 id="create-board">Create a board</h2>
${postForm(
  ctx,
  `${PATH}/create`,
  html`${field('board-id', 'Id', { name: 'id', required: true, max: 64, hint: ID_HINT })}
${orderFields('board')}
${field('board-schedule', 'Reset schedule (cron, UTC; optional)', {
  name: 'reset_schedule',
  max: 200,
  hint: 'Five fields of numbers: minute hour day-of-month month day-of-week (0 0 * * 1: Mondays at 00:00 UTC). Empty: one period forever.',
})}
<label><input type="checkbox" name="authoritative" value="yes"> Authoritative: only game servers write its records</label>`,
  'Create the board',
  { label: 'Create a board', progress: 'Creating…' },
)}`;
  },
};

/** One board: its settings, its standings of the current or previous period, and its deletion. */
export const leaderboardPage: ConsolePage = {
  path: `${PATH}/:leaderboard_id`,
  title: 'Leaderboard',
  role: 'admin',
  async render(ctx) {
    const boardId = ctx.params.leaderboard_id ?? '';
    const back = html`<p><a href="${PATH}">Back to the leaderboards</a></p>`;
    const board = await ctx.api<Board>(apiCall(leaderboardsGet, { params: { leaderboard_id: boardId } }));
    if (!board.ok) return html`${problemBox(board.problem)}${back}`;
    const { id, sort, operator, reset_schedule, authoritative, created_at } = board.body;
    return html`<h2><code>${id}</code></h2>
<dl class="facts">
<dt>Sort</dt><dd>${sort}</dd>
<dt>Operator</dt><dd>${operator}</dd>
<dt>Reset schedule</dt><dd>${reset_schedule ? html`<code>${reset_schedule}</code> (UTC)` : 'none: one period forever'}</dd>
<dt>Authoritative</dt><dd>${authoritative ? 'yes: game servers write its records' : 'no'}</dd>
<dt>Created</dt><dd>${when(created_at)}</dd>
<dt>Next reset</dt><dd>${when(board.body.next_reset_at)}</dd>
</dl>
<p><a href="${`/console/audit?target=${encodeURIComponent(id)}`}">Audit entries about this board</a></p>
${await standingsSection(ctx, id)}
<h2>Delete the board</h2>
${postForm(
  ctx,
  `${boardPath(id)}/delete`,
  html`<label><input type="checkbox" name="confirm" value="yes" required> Delete “${id}” with every period's records, for good.</label>`,
  'Delete the board',
  { label: 'Delete the board', progress: 'Deleting…' },
)}`;
  },
};

/**
 * The standings of the period the query names (`?period=previous`, else the current one). Only
 * the current period's records can be deleted: the API deletes in the current period.
 */
async function standingsSection(ctx: PageContext, boardId: string): Promise<Html> {
  const period = ctx.query.period === 'previous' ? 'previous' : 'current';
  const answer = await ctx.api<RecordsPage>(
    apiCall(leaderboardsRecords, {
      params: { leaderboard_id: boardId },
      query: { period, limit: STANDINGS_PAGE_SIZE, cursor: ctx.query.cursor },
    }),
  );
  const other =
    period === 'current'
      ? html`<a href="${`${boardPath(boardId)}?period=previous`}">The previous period</a>`
      : html`<a href="${boardPath(boardId)}">The current period</a>`;
  const heading = html`<h2>Standings: the ${period} period</h2>`;
  if (!answer.ok) return html`${heading}<p>${other}</p>${problemBox(answer.problem)}`;
  const { period_started_at: started, period_ended_at: ended } = answer.body;
  const span =
    period === 'previous' && !started
      ? 'No previous period yet: the board has not reset.'
      : `From ${when(started)}${ended ? ` to ${when(ended)}` : ''}.`;
  return html`${heading}<p>${span} ${other}</p>
${standingsTable(`Standings of the ${period} period, from rank 1`, answer.body.items, (record) =>
  period === 'current' ? deleteRecordForm(ctx, boardId, record) : '',
)}
${nextPage(boardPath(boardId), period === 'previous' ? { period } : {}, answer.body.next_cursor)}`;
}

function deleteRecordForm(ctx: PageContext, boardId: string, record: StandingsRecord): Html {
  return postForm(
    ctx,
    `${boardPath(boardId)}/records/${segment(record.user_id)}/delete`,
    field(`reason-${record.user_id}`, 'Reason', { name: 'reason', required: true, max: 500 }),
    'Delete record',
    { className: 'inline', label: `Delete the record of ${record.username}`, progress: 'Deleting…' },
  );
}

/** The board a form acts on, from the form's path. */
const boardOf = (params: Readonly<Record<string, string>>) => ({
  leaderboard_id: params.leaderboard_id ?? '',
});

export const leaderboardActions: ConsoleAction[] = [
  {
    path: `${PATH}/create`,
    summary: `Create a board (${routeOf(leaderboardsCreate)}).`,
    role: 'admin',
    back: PATH,
    call: (form) =>
      apiCall(leaderboardsCreate, {
        body: {
          id: form.id ?? '',
          sort: form.sort || undefined,
          operator: form.operator || undefined,
          // Empty is no schedule: one period forever.
          reset_schedule: form.reset_schedule?.trim() || null,
          authoritative: ticked(form, 'authoritative'),
        },
      }),
    done: (answer) => `Board “${(answer as Board).id}” created.`,
  },
  {
    path: `${PATH}/:leaderboard_id/records/:user_id/delete`,
    summary: `Delete a user's record in a board's current period, with the reason (${routeOf(leaderboardsAdminDeleteRecord)}).`,
    role: 'admin',
    back: (params) => boardPath(params.leaderboard_id ?? ''),
    call: (form, params) =>
      apiCall(leaderboardsAdminDeleteRecord, {
        params: { ...boardOf(params), user_id: params.user_id ?? '' },
        body: { reason: form.reason ?? '' },
      }),
    done: () => 'Record deleted; the records below it moved up.',
  },
  {
    path: `${PATH}/:leaderboard_id/delete`,
    summary: `Delete a board (${routeOf(leaderboardsDelete)}), once confirmed.`,
    role: 'admin',
    // Once deleted, its page is gone: back to the list. Unconfirmed or refused, back to its page.
    back: (params, done) => (done ? PATH : boardPath(params.leaderboard_id ?? '')),
    unconfirmed: (form) =>
      form.confirm === 'yes' ? undefined : 'Nothing was deleted: tick the box to confirm the deletion first.',
    call: (_form, params) => apiCall(leaderboardsDelete, { params: boardOf(params) }),
    done: () => 'Board deleted.',
  },
];
