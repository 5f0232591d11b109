import type { z } from 'zod';
import {
  TOURNAMENT_MAX_SIZE,
  type tournamentRecordSchema,
  type tournamentSchema,
  tournamentStateSchema,
  tournamentsCreate,
  tournamentsDelete,
  tournamentsGet,
  tournamentsList,
  tournamentsRecords,
} from '../../../../protocol/tournaments.js';
import { html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  field,
  listing,
  nextPage,
  postForm,
  problemBox,
  select,
  when,
} from '../page.js';
import { ID_HINT, orderFields, STANDINGS_PAGE_SIZE, standingsTable, ticked } from './leaderboards.js';

/**
 * Tournaments for admins: the list by state with a creation form (times typed in UTC), and each
 * tournament's standings with its deletion once confirmed. The API has no admin deletion of a
 * tournament's records, so its standings offer none.
 */

type Tournament = z.infer<typeof tournamentSchema>;
type TournamentRecord = z.infer<typeof tournamentRecordSchema>;

const PATH = '/console/tournaments';
const PAGE_SIZE = 25;
const STATES: readonly string[] = tournamentStateSchema.options;
const tournamentPath = (tournamentId: string): `/console${string}` => `${PATH}/${segment(tournamentId)}`;

const size = (tournament: Tournament) =>
  tournament.max_size === null ? `${tournament.size}` : `${tournament.size} / ${tournament.max_size}`;

/** How each state's list is ordered (the API's orders), for its caption. */
const ORDERS: Record<string, string> = {
  upcoming: 'Upcoming tournaments, soonest start first',
  active: 'Active tournaments, by start',
  ended: 'Ended tournaments, latest end first',
};

/** Tournaments of one state (active unless the query names another), and the creation form. */
export const tournamentsPage: ConsolePage = {
  path: PATH,
  title: 'Tournaments',
  role: 'admin',
  async render(ctx) {
    const state = STATES.includes(ctx.query.state ?? '') ? (ctx.query.state as string) : 'active';
    const filter = html`<form method="get" action="${PATH}" class="filters" aria-label="Filter tournaments">
${select('state', 'State', STATES, state)}<button type="submit">Show</button></form>`;
    const tournaments = await listing<Tournament>(ctx, {
      path: PATH,
      filters: filter,
      api: tournamentsList,
      query: { state },
      pageSize: PAGE_SIZE,
      caption: ORDERS[state] ?? state,
      headings: ['Id', 'Title', 'State', 'Start', 'End', 'Size', 'Join required', 'Authoritative'],
      row: (
        tournament,
      ) => html`<tr><td><a href="${tournamentPath(tournament.id)}"><code>${tournament.id}</code></a></td><td>${tournament.title}</td>
<td>${tournament.state}</td><td>${when(tournament.start_at)}</td><td>${when(tournament.end_at)}</td><td class="num">${size(tournament)}</td>
<td>${tournament.join_required ? 'yes' : 'no'}</td><td>${tournament.authoritative ? 'yes' : 'no'}</td></tr>`,
    });
    return html`${tournaments}
<h2 id="create-tournament">Create a tournament</h2>
${postForm(
  ctx,
  `${PATH}/create`,
  html`${field('tournament-id', 'Id', { name: 'id', required: true, max: 64, hint: ID_HINT })}
${field('tournament-title', 'Title', { name: 'title', required: true, max: 100 })}
${field('tournament-description', 'Description (optional)', { name: 'description', max: 1000 })}
${orderFields('tournament')}
${field('tournament-start', 'Start (UTC)', { name: 'start_at', type: 'datetime-local', required: true, hint: 'A start in the past opens it at once.' })}
${field('tournament-end', 'End (UTC)', { name: 'end_at', type: 'datetime-local', required: true, hint: 'After the start and in the future; both within 10 years.' })}
${field('tournament-max-size', 'Max size (optional)', { name: 'max_size', type: 'number', hint: `1 to ${TOURNAMENT_MAX_SIZE.toLocaleString('en')}; empty for no cap.` })}
<label><input type="checkbox" name="join_required" value="yes" checked> Join required: only participants submit</label>
<label><input type="checkbox" name="authoritative" value="yes"> Authoritative: only game servers write its records</label>`,
  'Create the tournament',
  { label: 'Create a tournament', progress: 'Creating…' },
)}`;
  },
};

/** One tournament: its settings and state, its standings (final once ended) and its deletion. */
export const tournamentPage: ConsolePage = {
  path: `${PATH}/:tournament_id`,
  title: 'Tournament',
  role: 'admin',
  async render(ctx) {
    const tournamentId = ctx.params.tournament_id ?? '';
    const back = html`<p><a href="${PATH}">Back to the tournaments</a></p>`;
    const found = await ctx.api<Tournament>(
      apiCall(tournamentsGet, { params: { tournament_id: tournamentId } }),
    );
    if (!found.ok) return html`${problemBox(found.problem)}${back}`;
    const tournament = found.body;
    const records = await ctx.api<{ items: TournamentRecord[]; next_cursor: string | null }>(
      apiCall(tournamentsRecords, {
        params: { tournament_id: tournament.id },
        query: { limit: STANDINGS_PAGE_SIZE, cursor: ctx.query.cursor },
      }),
    );
    return html`<h2>${tournament.title}</h2>
<p>${tournament.description}</p>
<dl class="facts">
<dt>Id</dt><dd><code>${tournament.id}</code></dd>
<dt>State</dt><dd>${tournament.state}</dd>
<dt>Start</dt><dd>${when(tournament.start_at)}</dd>
<dt>End</dt><dd>${when(tournament.end_at)}</dd>
<dt>Size</dt><dd>${size(tournament)}</dd>
<dt>Sort</dt><dd>${tournament.sort}</dd>
<dt>Operator</dt><dd>${tournament.operator}</dd>
<dt>Join required</dt><dd>${tournament.join_required ? 'yes' : 'no: the first submission joins'}</dd>
<dt>Authoritative</dt><dd>${tournament.authoritative ? 'yes: game servers write its records' : 'no'}</dd>
<dt>Created</dt><dd>${when(tournament.created_at)}</dd>
</dl>
<p><a href="${`/console/audit?target=${encodeURIComponent(tournament.id)}`}">Audit entries about this tournament</a></p>
<h2>Standings${tournament.state === 'ended' ? ' (final)' : ''}</h2>
${
  records.ok
    ? html`${standingsTable('Standings, from rank 1', records.body.items)}
${nextPage(tournamentPath(tournament.id), {}, records.body.next_cursor)}`
    : problemBox(records.problem)
}
<h2>Delete the tournament</h2>
${postForm(
  ctx,
  `${tournamentPath(tournament.id)}/delete`,
  html`<label><input type="checkbox" name="confirm" value="yes" required> Delete “${tournament.title}” with its participants and records, for good.</label>`,
  'Delete the tournament',
  { label: 'Delete the tournament', progress: 'Deleting…' },
)}`;
  },
};

/**
 * A datetime-local value (`2030-05-01T12:30`, seconds optional) read as UTC, as the form's labels
 * say; anything else goes to the API as typed, which refuses it naming the field.
 */
export function utcOf(value: string | undefined): string {
  const typed = value?.trim() ?? '';
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(typed)
    ? `${typed}${typed.length === 16 ? ':00' : ''}Z`
    : typed;
}

/** A whole number typed in a form as the API takes it; empty is none; anything else as typed, for the API to refuse. */
function maxSize(value: string | undefined): number | string | null {
  const typed = value?.trim() ?? '';
  if (!typed) return null;
  return /^\d{1,15}$/.test(typed) ? Number(typed) : typed;
}

export const tournamentActions: ConsoleAction[] = [
  {
    path: `${PATH}/create`,
    summary: `Create a tournament (${routeOf(tournamentsCreate)}).`,
    role: 'admin',
    back: PATH,
    call: (form) =>
      apiCall(tournamentsCreate, {
        body: {
          id: form.id ?? '',
          title: form.title ?? '',
          description: form.description ?? '',
          sort: form.sort || undefined,
          operator: form.operator || undefined,
          start_at: utcOf(form.start_at),
          end_at: utcOf(form.end_at),
          max_size: maxSize(form.max_size),
          join_required: ticked(form, 'join_required'),
          authoritative: ticked(form, 'authoritative'),
        },
      }),
    done: (answer) => {
      const created = answer as Tournament;
      return `Tournament “${created.title}” created: ${created.state}, ${when(created.start_at)} to ${when(created.end_at)}.`;
    },
  },
  {
    path: `${PATH}/:tournament_id/delete`,
    summary: `Delete a tournament (${routeOf(tournamentsDelete)}), once confirmed.`,
    role: 'admin',
    // Once deleted, its page is gone: back to the list. Unconfirmed or refused, back to its page.
    back: (params, done) => (done ? PATH : tournamentPath(params.tournament_id ?? '')),
    unconfirmed: (form) =>
      form.confirm === 'yes' ? undefined : 'Nothing was deleted: tick the box to confirm the deletion first.',
    call: (_form, params) =>
      apiCall(tournamentsDelete, { params: { tournament_id: params.tournament_id ?? '' } }),
    done: () => 'Tournament deleted.',
  },
];
