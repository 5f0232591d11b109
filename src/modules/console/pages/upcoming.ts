import { html } from '../html.js';
import type { ConsolePage } from '../page.js';
import type { OperatorRole } from '../session.js';

/**
 * Pages whose admin routes are not in the API yet: each says what it will show and which routes
 * it will call, so the page is filled in when they land (docs/console.md, "Adding a page").
 */
function upcoming(
  path: `/console/${string}`,
  title: string,
  role: OperatorRole,
  purpose: string,
  routes: readonly string[],
): ConsolePage {
  return {
    path,
    title,
    role,
    async render() {
      return html`<p>${purpose}</p>
<p>This page arrives with its admin routes, which the API does not have yet:</p>
<ul class="routes">${routes.map((route) => html`<li><code>${route}</code></li>`)}</ul>
<p class="hint">Every action here will also be an admin API route in <a href="/docs">the API reference</a>, and recorded in the audit log (<code>GET /api/admin/audit</code>).</p>`;
    },
  };
}

export const upcomingPages: ConsolePage[] = [
  upcoming(
    '/console/users',
    'Users',
    'moderator',
    'Find an account, see its sessions and roles, suspend it or lift a suspension.',
    [
      'GET /api/admin/users?q=&limit=&cursor=',
      'POST /api/admin/users/{user_id}/suspension {reason, until?}',
      'DELETE /api/admin/users/{user_id}/suspension',
      'PUT /api/admin/users/{user_id}/roles/{role}',
      'DELETE /api/admin/users/{user_id}/roles/{role}',
      'DELETE /api/admin/users/{user_id}/sessions',
    ],
  ),
  upcoming(
    '/console/worlds',
    'Worlds',
    'moderator',
    'Browse every world, whatever its visibility, and act on one.',
    ['GET /api/admin/worlds?q=&owner_id=&limit=&cursor=', 'GET /api/admin/worlds/{world_id}'],
  ),
  upcoming(
    '/console/game-servers',
    'Game servers',
    'admin',
    'The running and recent game servers of every world, and stopping one.',
    ['GET /api/admin/servers?status=&world_id=&limit=&cursor=', 'DELETE /api/servers/{server_id}'],
  ),
  upcoming('/console/groups', 'Groups', 'moderator', 'Browse groups and their rosters.', [
    'GET /api/admin/groups?q=&limit=&cursor=',
    'GET /api/admin/groups/{group_id}',
  ]),
  upcoming(
    '/console/audit',
    'Audit log',
    'admin',
    'Every admin and moderator action, through the API, the console or the CLI.',
    ['GET /api/admin/audit?actor=&target=&action=&limit=&cursor='],
  ),
];
