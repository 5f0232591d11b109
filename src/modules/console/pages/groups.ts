import {
  adminGroupsDelete,
  adminGroupsList,
  adminGroupsRemoveMember,
} from '../../../../protocol/group-admin.js';
import {
  GROUP_NAME_MAX,
  type Group,
  type GroupMember,
  groupsGet,
  groupsMembers,
} from '../../../../protocol/groups.js';
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
  table,
  when,
} from '../page.js';
import { userLink } from './users.js';

const PATH = '/console/groups';
const PAGE_SIZE = 20;
const groupPath = (groupId: string): `/console${string}` => `${PATH}/${segment(groupId)}`;

/** Every group in name order, by name. */
export const groupsPage: ConsolePage = {
  path: PATH,
  title: 'Groups',
  role: 'moderator',
  async render(ctx) {
    const query = ctx.query.query ?? '';
    const search = html`<form method="get" action="${PATH}" class="filters" aria-label="Search groups">
${field('query', 'Name', { value: query, max: GROUP_NAME_MAX })}<button type="submit">Search</button></form>`;
    return listing<Group>(ctx, {
      path: PATH,
      filters: search,
      api: adminGroupsList,
      query: { query },
      pageSize: PAGE_SIZE,
      caption: 'Groups',
      headings: ['Name', 'Owner', 'Join policy', 'Members', 'Created'],
      row: (
        group,
      ) => html`<tr><td><a href="${groupPath(group.id)}">${group.name}</a></td><td>${userLink(group.owner_id)}</td>
<td>${group.join_policy}</td><td>${group.member_count}</td><td>${when(group.created_at)}</td></tr>`,
    });
  },
};

/** One group's roster, a member's removal and the group's deletion (confirmed). */
export const groupPage: ConsolePage = {
  path: `${PATH}/:group_id`,
  title: 'Group',
  role: 'moderator',
  async render(ctx) {
    const groupId = ctx.params.group_id ?? '';
    const group = await ctx.api<Group>(apiCall(groupsGet, { params: { group_id: groupId } }));
    if (!group.ok) return html`${problemBox(group.problem)}<p><a href="${PATH}">Back to the groups</a></p>`;
    const roster = await ctx.api<{ items: GroupMember[]; next_cursor: string | null }>(
      apiCall(groupsMembers, {
        params: { group_id: groupId },
        query: { limit: PAGE_SIZE, cursor: ctx.query.cursor },
      }),
    );
    return html`<h2>${group.body.name}</h2>
<p>${group.body.description}</p>
<dl class="facts">
<dt>Id</dt><dd><code>${group.body.id}</code></dd>
<dt>Owner</dt><dd>${userLink(group.body.owner_id)}</dd>
<dt>Join policy</dt><dd>${group.body.join_policy}</dd>
<dt>Members</dt><dd>${group.body.member_count}</dd>
<dt>Created</dt><dd>${when(group.body.created_at)}</dd>
</dl>
<h2>Roster</h2>
${
  roster.ok
    ? html`${table(
        'Roster: the owner, then admins, then members',
        ['Member', 'Role', 'Joined', ''],
        roster.body.items.map(
          (
            member,
          ) => html`<tr><td>${userLink(member.user_id, member.username)}</td><td>${member.role}</td><td>${when(member.joined_at)}</td>
<td>${
            member.role === 'owner'
              ? ''
              : postForm(
                  ctx,
                  `${groupPath(groupId)}/members/${segment(member.user_id)}/remove`,
                  html``,
                  'Remove',
                  { className: 'inline', label: `Remove ${member.username}`, progress: 'Removing…' },
                )
          }</td></tr>`,
        ),
      )}${nextPage(groupPath(groupId), {}, roster.body.next_cursor)}`
    : problemBox(roster.problem)
}
<h2>Delete the group</h2>
${postForm(
  ctx,
  `${groupPath(groupId)}/delete`,
  html`<label><input type="checkbox" name="confirm" value="yes" required> Delete “${group.body.name}” with its roster, requests and chat, for good.</label>`,
  'Delete the group',
  { label: 'Delete the group', progress: 'Deleting…' },
)}`;
  },
};

export const groupActions: ConsoleAction[] = [
  {
    path: `${PATH}/:group_id/members/:user_id/remove`,
    summary: `Remove a member of a group (${routeOf(adminGroupsRemoveMember)}).`,
    role: 'moderator',
    back: (params) => groupPath(params.group_id ?? ''),
    call: (_form, params) =>
      apiCall(adminGroupsRemoveMember, {
        params: { group_id: params.group_id ?? '', user_id: params.user_id ?? '' },
      }),
    done: () => 'Member removed.',
  },
  {
    path: `${PATH}/:group_id/delete`,
    summary: `Delete a group (${routeOf(adminGroupsDelete)}), once confirmed.`,
    role: 'moderator',
    // Once deleted, its page is gone: back to the list. Unconfirmed or refused, back to its page.
    back: (params, done) => (done ? PATH : groupPath(params.group_id ?? '')),
    unconfirmed: (form) =>
      form.confirm === 'yes' ? undefined : 'Nothing was deleted: tick the box to confirm the deletion first.',
    call: (_form, params) => apiCall(adminGroupsDelete, { params: { group_id: params.group_id ?? '' } }),
    done: () => 'Group deleted.',
  },
];
