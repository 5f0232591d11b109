import { worldsRollback } from '../../../../protocol/chunks.js';
import {
  type AdminWorld,
  adminWorldsList,
  adminWorldsUpdate,
  type Revision,
  revisionsList,
  type World,
  worldVisibilitySchema,
} from '../../../../protocol/worlds.js';
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
  table,
  when,
} from '../page.js';
import { allows } from '../session.js';
import { userLink } from './users.js';

const PATH = '/console/worlds';
const PAGE_SIZE = 20;
const VISIBILITIES: readonly string[] = worldVisibilitySchema.options;
const worldPath = (worldId: string): `/console${string}` => `${PATH}/${segment(worldId)}`;

/** Every world whatever its visibility, newest first, by name or exact id and by visibility. */
export const worldsPage: ConsolePage = {
  path: PATH,
  title: 'Worlds',
  role: 'moderator',
  async render(ctx) {
    const query = ctx.query.query ?? '';
    const visibility = VISIBILITIES.includes(ctx.query.visibility ?? '')
      ? (ctx.query.visibility as string)
      : '';
    const search = html`<form method="get" action="${PATH}" class="filters" aria-label="Search worlds">
${field('query', 'Name or id', { value: query, max: 100 })}
${select('visibility', 'Visibility', ['', ...VISIBILITIES], visibility)}<button type="submit">Search</button></form>`;
    return listing<AdminWorld>(ctx, {
      path: PATH,
      filters: search,
      api: adminWorldsList,
      query: { query, visibility },
      pageSize: PAGE_SIZE,
      caption: 'Worlds',
      headings: ['Name', 'Owner', 'Visibility', 'Content revision', 'Updated'],
      row: (
        world,
      ) => html`<tr><td><a href="${worldPath(world.id)}">${world.name}</a></td><td>${userLink(world.owner_id, world.owner_username)}</td>
<td>${world.visibility}</td><td>${world.content_revision}</td><td>${when(world.updated_at)}</td></tr>`,
    });
  },
};

/** One world: its revision history, and for admins a rollback (confirmed) and its visibility. */
export const worldPage: ConsolePage = {
  path: `${PATH}/:world_id`,
  title: 'World',
  role: 'moderator',
  async render(ctx) {
    const worldId = ctx.params.world_id ?? '';
    const history = await ctx.api<{
      items: Revision[];
      next_cursor: string | null;
      content_revision: number;
      horizon: number;
    }>(
      apiCall(revisionsList, {
        params: { world_id: worldId },
        query: { limit: PAGE_SIZE, cursor: ctx.query.cursor },
      }),
    );
    if (!history.ok)
      return html`${problemBox(history.problem)}<p><a href="${PATH}">Back to the worlds</a></p>`;
    // The administration list answers any world, private ones too, when its query is the world's id.
    const found = await ctx.api<{ items: AdminWorld[] }>(
      apiCall(adminWorldsList, { query: { query: worldId, limit: 1 } }),
    );
    if (!found.ok) return html`${problemBox(found.problem)}<p><a href="${PATH}">Back to the worlds</a></p>`;
    const world = found.body.items[0];
    const { content_revision: content, horizon } = history.body;
    const admin = allows(ctx.operator.roles, 'admin');
    return html`<h2>${world ? world.name : worldId}</h2>
<dl class="facts">
<dt>Id</dt><dd><code>${worldId}</code></dd>
${world ? html`<dt>Owner</dt><dd>${userLink(world.owner_id, world.owner_username)}</dd><dt>Visibility</dt><dd>${world.visibility}</dd>` : ''}
<dt>Content revision</dt><dd>${content}</dd>
<dt>History horizon</dt><dd>${horizon}</dd>
</dl>
<p><a href="${`/console/audit?target=${encodeURIComponent(worldId)}`}">Audit entries about this world</a></p>
${
  admin
    ? html`<h2>Roll back</h2>${postForm(
        ctx,
        `${worldPath(worldId)}/rollback`,
        html`<input type="hidden" name="expected_content_revision" value="${content}">
${field('revision', 'To revision', { type: 'number', required: true, hint: `0 (the empty world), or ${horizon} to ${content}. Every chunk becomes what it was then; history stays.` })}
<label><input type="checkbox" name="confirm" value="yes" required> I have checked the revision: this rewrites the world's live content for everyone in it.</label>`,
        'Roll back',
        { label: 'Roll the world back', progress: 'Rolling back…' },
      )}
<h2>Visibility</h2>${postForm(
        ctx,
        `${worldPath(worldId)}/visibility`,
        select(
          'visibility-new',
          'Visibility',
          VISIBILITIES,
          world ? world.visibility : 'private',
          'visibility',
        ),
        'Change the visibility',
        { label: 'Change the visibility' },
      )}`
    : ''
}
<h2>Revisions</h2>
${table(
  'Revisions, newest first',
  ['Revision', 'Room', 'Chunk', 'Change', 'Bytes', 'Author', 'At'],
  history.body.items.map(
    (
      revision,
    ) => html`<tr><td>${revision.revision}</td><td><code>${revision.room_id}</code></td><td>${revision.x}, ${revision.y}, ${revision.z}</td>
<td>${revision.deleted ? 'deleted' : 'written'}</td><td>${revision.size}</td><td>${userLink(revision.author_id)}</td><td>${when(revision.created_at)}</td></tr>`,
  ),
)}
${nextPage(worldPath(worldId), {}, history.body.next_cursor)}`;
  },
};

const back = (params: Readonly<Record<string, string>>) => worldPath(params.world_id ?? '');
/** The world a form acts on, from the form's path. */
const world = (params: Readonly<Record<string, string>>) => ({ world_id: params.world_id ?? '' });
/** A whole number typed in a form as the API takes it; anything else as typed, for the API to refuse. */
const integer = (value: string | undefined) =>
  value && /^\d{1,15}$/.test(value) ? Number(value) : (value ?? '');

export const worldActions: ConsoleAction[] = [
  {
    path: `${PATH}/:world_id/rollback`,
    summary: `Roll a world back to a revision (${routeOf(worldsRollback)}), once confirmed.`,
    role: 'admin',
    back,
    unconfirmed: (form) =>
      form.confirm === 'yes'
        ? undefined
        : 'Nothing was rolled back: tick the box to confirm the revision first.',
    call: (form, params) =>
      apiCall(worldsRollback, {
        params: world(params),
        body: {
          revision: integer(form.revision),
          ...(form.expected_content_revision
            ? { expected_content_revision: integer(form.expected_content_revision) }
            : {}),
        },
      }),
    done: (answer) => {
      const result = answer as { content_revision: number; restored: number };
      return `Rolled back: ${result.restored} chunk(s) restored, content revision ${result.content_revision}.`;
    },
  },
  {
    path: `${PATH}/:world_id/visibility`,
    summary: `Change a world's visibility (${routeOf(adminWorldsUpdate)}).`,
    role: 'admin',
    back,
    call: (form, params) =>
      apiCall(adminWorldsUpdate, { params: world(params), body: { visibility: form.visibility ?? '' } }),
    done: (answer) => `“${(answer as World).name}” is now ${(answer as World).visibility}.`,
  },
];
