import { z } from 'zod';
import { messageBodySchema } from './chat.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * Groups (docs/groups.md): a named roster with roles owner, admin and member. Anyone signed in
 * reads a group and its roster; only members read and write its chat. The owner does everything;
 * admins manage members and join requests but never another admin or the owner; members manage
 * only themselves. An id that names no group answers 404.
 */

const id = z.string().max(64);
export const GROUP_NAME_MIN = 3;
export const GROUP_NAME_MAX = 64;
export const GROUP_DESCRIPTION_MAX = 1000;

export const groupJoinPolicySchema = z.enum(['open', 'closed']);
export type GroupJoinPolicy = z.infer<typeof groupJoinPolicySchema>;
export const groupRoleSchema = z.enum(['owner', 'admin', 'member']);
export type GroupRole = z.infer<typeof groupRoleSchema>;

export const groupSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  /** Null once the owner's account was deleted, until an admin claims the group. */
  owner_id: z.string().nullable(),
  join_policy: groupJoinPolicySchema,
  member_count: z.number().int(),
  created_at: z.string(),
});
export type Group = z.infer<typeof groupSchema>;

export const groupMemberSchema = z.object({
  user_id: z.string(),
  username: z.string(),
  role: groupRoleSchema,
  joined_at: z.string(),
});
export type GroupMember = z.infer<typeof groupMemberSchema>;

export const groupMembershipSchema = z.object({
  group: groupSchema,
  role: groupRoleSchema,
  joined_at: z.string(),
});
export type GroupMembership = z.infer<typeof groupMembershipSchema>;

export const groupJoinRequestSchema = z.object({
  user_id: z.string(),
  username: z.string(),
  created_at: z.string(),
});
export type GroupJoinRequest = z.infer<typeof groupJoinRequestSchema>;

export const groupRequestedSchema = z.object({ status: z.literal('requested') });

/** A group chat message (chat.message events of a group's topic carry it too). */
export const groupMessageSchema = z.object({
  id: z.string(),
  group_id: z.string(),
  /** Null once the sender's account was deleted. */
  sender_id: z.string().nullable(),
  body: z.string(),
  created_at: z.string(),
  /** The text filter masked words of the body. */
  filtered: z.boolean(),
});
export type GroupMessage = z.infer<typeof groupMessageSchema>;

const tag = 'groups';
const GROUP = '/api/groups/:group_id';
const MEMBERS = `${GROUP}/members`;
const MEMBER = `${MEMBERS}/:user_id`;
const name = text(GROUP_NAME_MIN, GROUP_NAME_MAX).refine((value) => value.trim() === value, {
  message: 'must not start or end with whitespace',
});
const description = text(0, GROUP_DESCRIPTION_MAX);
const inGroup = z.object({ group_id: id }).strict();
const member = z.object({ group_id: id, user_id: id }).strict();

export const groupsCreate = operation('groups.create', {
  tag,
  summary:
    'Create a group; the caller is its owner. Names are unique regardless of case (409 CONFLICT). An account owns at most MAX_GROUPS_PER_USER groups (409 QUOTA_EXCEEDED) and creates at most CREATE_RATE_LIMIT_COUNT per window (429).',
  rest: { method: 'POST', path: '/api/groups', status: 201 },
  request: z
    .object({ name, description: description.optional(), join_policy: groupJoinPolicySchema.optional() })
    .strict(),
  response: groupSchema,
  errors: [401, 409, 422, 429],
});

export const groupsGet = operation('groups.get', {
  tag,
  summary: 'One group; anyone signed in may read it.',
  rest: { method: 'GET', path: GROUP },
  request: inGroup,
  response: groupSchema,
  errors: [401, 404],
});

export const groupsUpdate = operation('groups.update', {
  tag,
  summary: "Change the group's name, description or join policy (owner and admins).",
  rest: { method: 'PATCH', path: GROUP },
  request: z
    .object({
      group_id: id,
      name: name.optional(),
      description: description.optional(),
      join_policy: groupJoinPolicySchema.optional(),
    })
    .strict(),
  response: groupSchema,
  errors: [401, 403, 404, 409, 422],
});

export const groupsDelete = operation('groups.delete', {
  tag,
  summary: 'Delete the group with its roster, requests and chat (owner only).',
  rest: { method: 'DELETE', path: GROUP, status: 204 },
  request: inGroup,
  response: z.null(),
  errors: [401, 403, 404],
});

export const groupsSearch = operation('groups.search', {
  tag,
  summary:
    'Groups whose name starts with `q`, or has words starting with each word of `q`, regardless of case; in name order. Without `q`, every group in name order.',
  rest: { method: 'GET', path: '/api/groups' },
  request: z.object({ q: text(0, GROUP_NAME_MAX).optional(), ...listQuery }).strict(),
  response: pageOf(groupSchema),
  errors: [401, 422],
});

export const groupsMine = operation('groups.mine', {
  tag,
  summary: "The caller's groups with their role, most recently joined first.",
  rest: { method: 'GET', path: '/api/users/me/groups' },
  request: z.object(listQuery).strict(),
  response: pageOf(groupMembershipSchema),
  errors: [401, 422],
});

export const groupsMembers = operation('groups.members', {
  tag,
  summary:
    'The roster: the owner, then admins, then members, each by join time (longest-standing first); `role` keeps one role.',
  rest: { method: 'GET', path: MEMBERS },
  request: z.object({ group_id: id, role: groupRoleSchema.optional(), ...listQuery }).strict(),
  response: pageOf(groupMemberSchema),
  errors: [401, 404, 422],
});

export const groupsJoin = operation('groups.join', {
  tag,
  summary:
    'Join an open group (201 member) or ask to join a closed one (202 requested). A member or a pending request already: 409 CONFLICT; a full group: 409 GROUP_FULL; more than GROUP_MAX_MEMBERSHIPS_PER_USER groups and requests: 409 QUOTA_EXCEEDED.',
  frame: true,
  rest: {
    method: 'POST',
    path: MEMBERS,
    status: 202,
    createdWhen: (answer: z.output<typeof groupMemberSchema> | { status: 'requested' }) =>
      'user_id' in answer,
  },
  request: inGroup,
  response: z.union([groupMemberSchema, groupRequestedSchema]),
  errors: [401, 404, 409, 429],
});

export const groupsRequests = operation('groups.requests', {
  tag,
  summary: 'Pending join requests, oldest first (owner and admins).',
  rest: { method: 'GET', path: `${GROUP}/requests` },
  request: z.object({ group_id: id, ...listQuery }).strict(),
  response: pageOf(groupJoinRequestSchema),
  errors: [401, 403, 404, 422],
});

export const groupsApprove = operation('groups.approve', {
  tag,
  summary:
    'Accept a pending join request: the user becomes a member (owner and admins; 409 GROUP_FULL when full).',
  frame: true,
  rest: { method: 'POST', path: `${GROUP}/requests/:user_id/approve`, status: 201 },
  request: member,
  response: groupMemberSchema,
  errors: [401, 403, 404, 409],
});

export const groupsDecline = operation('groups.decline', {
  tag,
  summary: 'Refuse a pending join request (owner and admins).',
  frame: true,
  rest: { method: 'POST', path: `${GROUP}/requests/:user_id/decline`, status: 204 },
  request: member,
  response: z.null(),
  errors: [401, 403, 404],
});

export const groupsRemoveMember = operation('groups.removeMember', {
  tag,
  summary:
    'Leave the group (your own user_id; a pending request is withdrawn the same way) or kick a member: the owner kicks anyone, admins kick members. The owner leaves only after a transfer (409).',
  frame: true,
  rest: { method: 'DELETE', path: MEMBER, status: 204 },
  request: member,
  response: z.null(),
  errors: [401, 403, 404, 409],
});

export const groupsSetRole = operation('groups.setRole', {
  tag,
  summary:
    "Make a member an admin or an admin a member. The owner changes anyone's role; admins promote members and may step down themselves. `owner` is refused (422): use transfer.",
  frame: true,
  rest: { method: 'PATCH', path: MEMBER },
  request: z.object({ group_id: id, user_id: id, role: z.enum(['admin', 'member']) }).strict(),
  response: groupMemberSchema,
  errors: [401, 403, 404, 409, 422],
});

export const groupsTransfer = operation('groups.transfer', {
  tag,
  summary: 'Make another member the owner (owner only); the previous owner becomes an admin.',
  rest: { method: 'POST', path: `${GROUP}/transfer` },
  request: z.object({ group_id: id, user_id: id }).strict(),
  response: groupSchema,
  errors: [401, 403, 404, 409, 422],
});

export const groupsClaim = operation('groups.claim', {
  tag,
  summary:
    "Take ownership of a group whose owner's account was deleted: only its longest-standing admin may (403 otherwise, 409 while it has an owner).",
  rest: { method: 'POST', path: `${GROUP}/claim` },
  request: inGroup,
  response: groupSchema,
  errors: [401, 403, 404, 409],
});

const GROUP_MESSAGES = `${GROUP}/messages`;

export const chatSendToGroup = operation('chat.sendToGroup', {
  tag,
  summary:
    "Write to the group's chat (members only; 1-2000 characters after trimming, the text filter and rate limit of world chat); its chat.message event reaches the sockets that joined the group's chat.",
  frame: true,
  rest: { method: 'POST', path: GROUP_MESSAGES, status: 201 },
  request: z.object({ group_id: id, body: messageBodySchema }).strict(),
  response: groupMessageSchema,
  errors: [401, 403, 404, 422, 429],
});

export const chatGroupHistory = operation('chat.groupHistory', {
  tag,
  summary: "The group's chat, newest first (members only); `before` is the previous page's next_cursor.",
  rest: { method: 'GET', path: GROUP_MESSAGES },
  request: z.object({ group_id: id, limit: listQuery.limit, before: listQuery.cursor }).strict(),
  response: pageOf(groupMessageSchema),
  errors: [401, 403, 404, 422],
});

export const groupOperations = [
  groupsCreate,
  groupsGet,
  groupsUpdate,
  groupsDelete,
  groupsSearch,
  groupsMine,
  groupsMembers,
  groupsJoin,
  groupsRequests,
  groupsApprove,
  groupsDecline,
  groupsRemoveMember,
  groupsSetRole,
  groupsTransfer,
  groupsClaim,
  chatSendToGroup,
  chatGroupHistory,
] as const;

/** Events of a group, on its chat topic (sockets that joined its chat) and the affected user's own topic. */
export interface GroupMemberEvent {
  group_id: string;
  member: GroupMember;
  /** Who let the member in (an approval); null for a join of an open group. */
  by: string | null;
}
export interface GroupMemberGoneEvent {
  group_id: string;
  user_id: string;
  /** Who removed the member: null when they left. */
  by: string | null;
}
export interface GroupRoleEvent {
  group_id: string;
  member: GroupMember;
  by: string;
}
export interface GroupOwnerEvent {
  group_id: string;
  owner_id: string;
  previous_owner_id: string | null;
}
/** A join request made, declined or withdrawn: to the requester and to the group's owner and admins. */
export interface GroupRequestEvent {
  group_id: string;
  user_id: string;
  /** Who declined or withdrew it; null for a new request. */
  by: string | null;
}
export interface GroupUpdatedEvent {
  group: Group;
}
export interface GroupDeletedEvent {
  group_id: string;
}

/**
 * Roster changes of a group, by server frame type, to the sockets that joined its chat and to the
 * affected user's own sockets (once: a socket of that user that joined the chat gets it as a user
 * event); join requests made, declined and withdrawn go to the requester and the group's owner
 * and admins instead. An approval is a member_joined whose `by` is the approver. A group's chat
 * messages are `chat.message` frames (protocol/frames.ts).
 */
export interface GroupEventPayloads {
  'group.member_joined': GroupMemberEvent;
  'group.member_left': GroupMemberGoneEvent;
  'group.member_kicked': GroupMemberGoneEvent;
  'group.role_changed': GroupRoleEvent;
  'group.ownership_changed': GroupOwnerEvent;
  'group.join_requested': GroupRequestEvent;
  'group.request_declined': GroupRequestEvent;
  /** The requester withdrew their request (`by` is the requester). */
  'group.request_withdrawn': GroupRequestEvent;
  'group.updated': GroupUpdatedEvent;
  'group.deleted': GroupDeletedEvent;
}
