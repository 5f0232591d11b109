import { z } from 'zod';
import { GROUP_NAME_MAX, groupSchema } from './groups.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * The administration of groups (docs/groups.md, "Administration"), for moderators and admins;
 * others get 403 FORBIDDEN. A roster is read with groups.members, which anyone signed in may use.
 * Removals and deletions go through the owner's own rules and events (the members' sockets and
 * rosters follow as for an owner's action) and are recorded in the audit log.
 */

const id = z.string().max(64);
const tag = 'admin';

export const adminGroupsList = operation('admin.groups.list', {
  tag,
  summary:
    'Every group with its owner, join policy and member count, in name order; `query` matches as groups.search does (a prefix of the name or words of it, regardless of case).',
  rest: { method: 'GET', path: '/api/admin/groups' },
  request: z.object({ query: text(0, GROUP_NAME_MAX).optional(), ...listQuery }).strict(),
  response: pageOf(groupSchema),
  errors: [401, 403, 422],
});

export const adminGroupsRemoveMember = operation('admin.groups.removeMember', {
  tag,
  summary:
    "Remove a member (or an admin) of any group, as a kick: the member's sockets leave the group's chat and the roster is told (`group.member_kicked`, `by` the moderator). The owner is never removed (409 CONFLICT: transfer or delete the group). Recorded as `groups.members.remove` with the member's role before. 404 for no such group or no such member.",
  rest: { method: 'DELETE', path: '/api/admin/groups/:group_id/members/:user_id', status: 204 },
  request: z.object({ group_id: id, user_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404, 409],
});

export const adminGroupsDelete = operation('admin.groups.delete', {
  tag,
  summary:
    'Delete any group with its roster, requests and chat, as its owner would (`group.deleted` to its sockets). Recorded as `groups.delete` with the group as it was. 404 for no such group.',
  rest: { method: 'DELETE', path: '/api/admin/groups/:group_id', status: 204 },
  request: z.object({ group_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404],
});

export const groupAdminOperations = [adminGroupsList, adminGroupsRemoveMember, adminGroupsDelete] as const;
