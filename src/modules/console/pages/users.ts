import {
  type AdminUser,
  type AdminUserDetail,
  adminRolesGrant,
  adminRolesRevoke,
  adminSessionsRevoke,
  adminUsersGet,
  adminUsersList,
  adminUsersSuspend,
  adminUsersUnsuspend,
  SUSPENSION_REASON_MAX,
} from '../../../../protocol/admin.js';
import { adminPartiesOfUser, type Party } from '../../../../protocol/parties.js';
import { hasRole } from '../../../platform/context.js';
import { type Html, html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  field,
  listing,
  type PageContext,
  postForm,
  problemBox,
  select,
  table,
  when,
} from '../page.js';
import { allows } from '../session.js';

const PATH = '/console/users';
const PAGE_SIZE = 20;
/** The roles the console grants and takes; `user` every account keeps. */
const STAFF_ROLES = ['moderator', 'admin'] as const;
/** The suspension lengths offered besides a date; '' is "until lifted" (or the date, when given). */
const DURATIONS: Record<string, number> = {
  '1 hour': 3600_000,
  '1 day': 86_400_000,
  '7 days': 7 * 86_400_000,
  '30 days': 30 * 86_400_000,
};

export const userPath = (userId: string): `/console${string}` => `${PATH}/${segment(userId)}`;

/** A user's id as the console links it: to their page. */
export function userLink(userId: string | null | undefined, label?: string): Html {
  if (!userId) return html`<span class="empty">a deleted account</span>`;
  return html`<a href="${userPath(userId)}"><code>${label ?? userId}</code></a>`;
}

function suspensionText(suspension: AdminUser['suspension']): Html {
  if (!suspension) return html`no`;
  return html`until ${suspension.suspended_until ? when(suspension.suspended_until) : 'lifted'}: ${suspension.reason}`;
}

/** Accounts by name or id, newest first. */
export const usersPage: ConsolePage = {
  path: PATH,
  title: 'Users',
  role: 'moderator',
  async render(ctx) {
    const query = ctx.query.query ?? '';
    const search = html`<form method="get" action="${PATH}" class="filters" aria-label="Search accounts">
${field('query', 'Name or id', { value: query, max: 64 })}<button type="submit">Search</button></form>`;
    return listing<AdminUser>(ctx, {
      path: PATH,
      filters: search,
      api: adminUsersList,
      query: { query },
      pageSize: PAGE_SIZE,
      caption: 'Accounts',
      headings: ['Username', 'Id', 'Roles', 'Created', 'Last seen', 'Suspended'],
      row: (
        user,
      ) => html`<tr><td><a href="${userPath(user.id)}">${user.username}</a></td><td><code>${user.id}</code></td>
<td>${user.roles.join(', ')}</td><td>${when(user.created_at)}</td><td>${when(user.last_seen_at)}</td><td>${suspensionText(user.suspension)}</td></tr>`,
    });
  },
};

/** One account: its roles, suspension, party and sessions, and the forms the operator's roles allow. */
export const userPage: ConsolePage = {
  path: `${PATH}/:user_id`,
  title: 'User',
  role: 'moderator',
  async render(ctx) {
    const userId = ctx.params.user_id ?? '';
    const answer = await ctx.api<AdminUserDetail>(apiCall(adminUsersGet, { params: { user_id: userId } }));
    if (!answer.ok)
      return html`${problemBox(answer.problem)}<p><a href="${PATH}">Back to the accounts</a></p>`;
    const user = answer.body;
    const party = await ctx.api<Party>(apiCall(adminPartiesOfUser, { params: { user_id: user.id } }));
    const admin = allows(ctx.operator.roles, 'admin');
    const self = user.username === ctx.operator.username;
    const staff = hasRole(user, 'moderator');
    const maySuspend = !self && (admin || !staff);
    return html`<h2>${user.username}</h2>
<dl class="facts">
<dt>Id</dt><dd><code>${user.id}</code></dd>
<dt>Created</dt><dd>${when(user.created_at)}</dd>
<dt>Last seen</dt><dd>${when(user.last_seen_at)}</dd>
<dt>Roles</dt><dd>${user.roles.join(', ')}</dd>
<dt>Suspended</dt><dd>${user.suspension ? html`${suspensionText(user.suspension)} (since ${when(user.suspension.suspended_at)}, by ${userLink(user.suspension.suspended_by, user.suspension.suspended_by ?? undefined)})` : 'no'}</dd>
</dl>
<p><a href="${`/console/audit?target=${encodeURIComponent(user.id)}`}">Audit entries about this account</a></p>
${admin ? rolesForms(ctx, user) : ''}
${maySuspend ? suspensionForms(ctx, user) : ''}
<h2>Party</h2>
${party.ok ? partyFacts(party.body) : party.status === 404 ? html`<p class="empty">In no party.</p>` : problemBox(party.problem)}
<h2>Sessions</h2>
${table(
  'Most recent sessions',
  ['Id', 'Created', 'Expires', 'Last refreshed', 'Revoked'],
  user.sessions.map(
    (
      session,
    ) => html`<tr><td><code>${session.id}</code></td><td>${when(session.created_at)}</td><td>${when(session.expires_at)}</td>
<td>${when(session.last_refreshed_at)}</td><td>${session.revoked_at ? `${when(session.revoked_at)} (${session.revoked_reason ?? '—'})` : 'open'}</td></tr>`,
  ),
)}
${
  admin
    ? postForm(ctx, `${userPath(user.id)}/sessions/revoke`, html``, 'Revoke every session', {
        label: 'Revoke every session',
        progress: 'Revoking…',
      })
    : ''
}`;
  },
};

/** The user's party: its settings and members, longest-standing first, the leader marked. */
function partyFacts(party: Party): Html {
  return html`<dl class="facts">
<dt>Party</dt><dd><code>${party.id}</code> (${party.open ? 'open' : 'closed'}, ${party.members.length} of ${party.max_size}), since ${when(party.created_at)}</dd>
</dl>
${table(
  'Party members',
  ['Member', 'Joined'],
  party.members.map(
    (member) =>
      html`<tr><td>${userLink(member.user_id, member.username)}${member.user_id === party.leader_id ? ' (leader)' : ''}</td><td>${when(member.joined_at)}</td></tr>`,
  ),
)}`;
}

/**
 * A grant or a revoke form per staff role, by whether the account holds that very role: not a
 * check of powers (hasRole ranks them), since an admin may also hold moderator, or not.
 */
function rolesForms(ctx: PageContext, user: AdminUserDetail): Html {
  return html`<h2>Roles</h2><div class="actions">${STAFF_ROLES.map((role) =>
    user.roles.includes(role)
      ? postForm(
          ctx,
          `${userPath(user.id)}/roles/revoke`,
          html`<input type="hidden" name="role" value="${role}">`,
          `Revoke ${role}`,
          {
            className: 'inline',
            label: `Revoke the ${role} role`,
          },
        )
      : postForm(
          ctx,
          `${userPath(user.id)}/roles/grant`,
          html`<input type="hidden" name="role" value="${role}">`,
          `Grant ${role}`,
          {
            className: 'inline',
            label: `Grant the ${role} role`,
          },
        ),
  )}</div>`;
}

function suspensionForms(ctx: PageContext, user: AdminUserDetail): Html {
  const suspend = postForm(
    ctx,
    `${userPath(user.id)}/suspend`,
    html`${field('reason', 'Reason', { required: true, max: SUSPENSION_REASON_MAX })}
${field('until', 'Until (UTC, optional)', { type: 'datetime-local', hint: 'Leave empty for a duration below, or for a suspension until lifted.' })}
${select('duration', 'Or for', ['until lifted', ...Object.keys(DURATIONS)])}`,
    user.suspension ? 'Replace the suspension' : 'Suspend',
    { label: 'Suspend the account', progress: 'Suspending…' },
  );
  const lift = user.suspension
    ? postForm(ctx, `${userPath(user.id)}/unsuspend`, html``, 'Lift the suspension', {
        label: 'Lift the suspension',
      })
    : '';
  return html`<h2>Suspension</h2>${suspend}${lift}`;
}

/**
 * The form's end of a suspension as the API takes it: a datetime-local value read as UTC, else
 * now plus the chosen duration, else none (until lifted). Anything else goes to the API as typed,
 * which refuses it naming `until`.
 */
export function suspensionUntil(
  form: Readonly<Record<string, string>>,
  now = Date.now(),
): string | undefined {
  const until = form.until?.trim();
  if (until) return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(until) ? `${until}:00Z` : until;
  const duration = DURATIONS[form.duration ?? ''];
  return duration ? new Date(now + duration).toISOString() : undefined;
}

const back = (params: Readonly<Record<string, string>>) => userPath(params.user_id ?? '');
/** The account a form acts on, from the form's path; with a role, from the form. */
const account = (params: Readonly<Record<string, string>>) => ({ user_id: params.user_id ?? '' });
const accountRole = (form: Readonly<Record<string, string>>, params: Readonly<Record<string, string>>) => ({
  ...account(params),
  role: form.role ?? '',
});

export const userActions: ConsoleAction[] = [
  {
    path: `${PATH}/:user_id/roles/grant`,
    summary: `Give an account a role (${routeOf(adminRolesGrant)}).`,
    role: 'admin',
    back,
    call: (form, params) => apiCall(adminRolesGrant, { params: accountRole(form, params) }),
    done: (answer) =>
      `${(answer as AdminUser).username} now holds ${(answer as AdminUser).roles.join(', ')}.`,
  },
  {
    path: `${PATH}/:user_id/roles/revoke`,
    summary: `Take a role from an account (${routeOf(adminRolesRevoke)}).`,
    role: 'admin',
    back,
    call: (form, params) => apiCall(adminRolesRevoke, { params: accountRole(form, params) }),
    done: (answer) =>
      `${(answer as AdminUser).username} now holds ${(answer as AdminUser).roles.join(', ')}.`,
  },
  {
    path: `${PATH}/:user_id/sessions/revoke`,
    summary: `Revoke every session of an account (${routeOf(adminSessionsRevoke)}).`,
    role: 'admin',
    back,
    call: (_form, params) => apiCall(adminSessionsRevoke, { params: account(params) }),
    done: (answer) => `${(answer as { revoked_sessions: number }).revoked_sessions} open session(s) revoked.`,
  },
  {
    path: `${PATH}/:user_id/suspend`,
    summary: `Suspend an account (${routeOf(adminUsersSuspend)}).`,
    role: 'moderator',
    back,
    call: (form, params) => {
      const until = suspensionUntil(form);
      return apiCall(adminUsersSuspend, {
        params: account(params),
        body: { reason: form.reason ?? '', ...(until ? { until } : {}) },
      });
    },
    done: (answer) => {
      const user = answer as AdminUser;
      return `${user.username} is suspended ${user.suspension?.suspended_until ? `until ${when(user.suspension.suspended_until)}` : 'until lifted'}; their sessions are revoked.`;
    },
  },
  {
    path: `${PATH}/:user_id/unsuspend`,
    summary: `Lift the suspension of an account (${routeOf(adminUsersUnsuspend)}).`,
    role: 'moderator',
    back,
    call: (_form, params) => apiCall(adminUsersUnsuspend, { params: account(params) }),
    done: (answer) => `${(answer as AdminUser).username} is no longer suspended.`,
  },
];
