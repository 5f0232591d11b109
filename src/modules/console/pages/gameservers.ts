import {
  type AdminGameServer,
  adminServersList,
  gameServerStatusFilterSchema,
  gameServersStop,
} from '../../../../protocol/gameservers.js';
import { html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import { type ConsoleAction, type ConsolePage, listing, postForm, select, when } from '../page.js';
import { userLink } from './users.js';

const PATH = '/console/game-servers';
const PAGE_SIZE = 20;
const STATUSES: readonly string[] = gameServerStatusFilterSchema.options;

/** Every game server, newest first, by status, with its access and owner; a live one can be stopped. */
export const gameServersPage: ConsolePage = {
  path: PATH,
  title: 'Game servers',
  role: 'admin',
  async render(ctx) {
    const status = STATUSES.includes(ctx.query.status ?? '') ? (ctx.query.status as string) : '';
    const filter = html`<form method="get" action="${PATH}" class="filters" aria-label="Filter game servers">
${select('status', 'Status', ['', ...STATUSES], status)}<button type="submit">Show</button></form>`;
    return listing<AdminGameServer>(ctx, {
      path: PATH,
      filters: filter,
      api: adminServersList,
      query: { status },
      pageSize: PAGE_SIZE,
      caption: 'Game servers',
      headings: [
        'Server',
        'World',
        'Status',
        'Players',
        'Backend',
        'Address',
        'Access',
        'Owner',
        'Created',
        'Ended',
        '',
      ],
      row: (
        server,
      ) => html`<tr><td><code>${server.server_id}</code></td><td><a href="${`/console/worlds/${segment(server.world_id)}`}"><code>${server.world_id}</code></a></td>
<td>${server.status}${server.error ? html`<br><small>${server.error}</small>` : ''}</td><td>${server.players} / ${server.max_players}</td><td>${server.backend}</td>
<td>${server.address ?? '—'}</td><td>${server.access}</td><td>${userLink(server.owner_id)}</td><td>${when(server.created_at)}</td><td>${when(server.ended_at)}</td>
<td>${
        server.status === 'starting' || server.status === 'ready'
          ? postForm(ctx, `${PATH}/${segment(server.server_id)}/stop`, html``, 'Stop', {
              className: 'inline',
              label: `Stop the server ${server.server_id}`,
              progress: 'Stopping…',
            })
          : ''
      }</td></tr>`,
    });
  },
};

export const stopGameServer: ConsoleAction = {
  path: `${PATH}/:server_id/stop`,
  summary: `Stop a game server (${routeOf(gameServersStop)}).`,
  role: 'admin',
  back: PATH,
  call: (_form, params) => apiCall(gameServersStop, { params: { server_id: params.server_id ?? '' } }),
  done: () => 'Server stopped.',
};
