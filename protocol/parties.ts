import { z } from 'zod';
import { messageBodySchema } from './chat.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';

/**
 * Parties (docs/parties.md): a few users who play together, one of them the leader. A user is in
 * one party at most. A party is visible to its members alone: to anyone else every route under
 * /api/parties/{party_id} answers 404 as for an unknown id, except a join the party admits.
 * Nothing lists parties. Parties live in the shared database, so any node serves any party. A
 * party has a chat its members read and write; each message reaches every member's sockets.
 */

const id = z.string().max(64);
export const PARTY_SIZE_MIN = 2;
export const PARTY_SIZE_MAX = 16;
export const PARTY_SIZE_DEFAULT = 8;

const maxSize = z.number().int().min(PARTY_SIZE_MIN).max(PARTY_SIZE_MAX);

export const partyMemberSchema = z.object({
  user_id: z.string(),
  username: z.string(),
  joined_at: z.string(),
});
export type PartyMember = z.infer<typeof partyMemberSchema>;

export const partySchema = z
  .object({
    id: z.string(),
    /** One of `members`. */
    leader_id: z.string(),
    /** Whether anyone may join without an invitation. */
    open: z.boolean(),
    max_size: z.number().int(),
    /** Longest-standing first (joined_at, then user_id). */
    members: z.array(partyMemberSchema),
    created_at: z.string(),
  })
  .meta({ id: 'Party' });
export type Party = z.infer<typeof partySchema>;

export const partyInviteSchema = z.object({
  party_id: z.string(),
  user_id: z.string(),
  invited_by: z.string(),
  created_at: z.string(),
  /** Pending until then, until a join uses it, or until the party ends. */
  expires_at: z.string(),
});
export type PartyInvite = z.infer<typeof partyInviteSchema>;

/** A party chat message (the chat.message events on each member's own topic carry it too). */
export const partyMessageSchema = z.object({
  id: z.string(),
  party_id: z.string(),
  /** Null once the sender's account was deleted. */
  sender_id: z.string().nullable(),
  body: z.string(),
  created_at: z.string(),
  /** The text filter masked words of the body. */
  filtered: z.boolean(),
});
export type PartyMessage = z.infer<typeof partyMessageSchema>;

const tag = 'parties';
const PARTY = '/api/parties/:party_id';
const inParty = z.object({ party_id: id }).strict();
const toUser = z.object({ party_id: id, user_id: id }).strict();
const notFound = 'Anyone but a member gets 404 NOT_FOUND, as for an unknown id.';

export const partiesCreate = operation('parties.create', {
  tag,
  summary: `Create a party (body optional: open defaults to false, max_size to ${PARTY_SIZE_DEFAULT}, ${PARTY_SIZE_MIN}-${PARTY_SIZE_MAX}); the caller is its leader and only member. A caller in a party already: 409 ALREADY_IN_PARTY.`,
  rest: { method: 'POST', path: '/api/parties', status: 201, optionalBody: true },
  request: z.object({ open: z.boolean().optional(), max_size: maxSize.optional() }).strict(),
  response: partySchema,
  errors: [401, 409, 422],
});

export const partiesMine = operation('parties.mine', {
  tag,
  summary: "The caller's party; 404 NOT_FOUND when they are in none.",
  rest: { method: 'GET', path: '/api/parties/me' },
  response: partySchema,
  errors: [401, 404],
});

export const partiesGet = operation('parties.get', {
  tag,
  summary: `One party. ${notFound}`,
  rest: { method: 'GET', path: PARTY },
  request: inParty,
  response: partySchema,
  errors: [401, 404, 422],
});

export const partiesUpdate = operation('parties.update', {
  tag,
  summary: `Change whether the party is open and its max_size (the leader; at least one field). A max_size below the member count: 409 CONFLICT. ${notFound}`,
  rest: { method: 'PATCH', path: PARTY },
  request: z.object({ party_id: id, open: z.boolean().optional(), max_size: maxSize.optional() }).strict(),
  response: partySchema,
  errors: [401, 403, 404, 409, 422],
});

export const partiesInvite = operation('parties.invite', {
  tag,
  summary:
    'Invite a user (any member of an open party, only the leader of a closed one); inviting again renews the invitation. The invitee gets party.invite. Invitations count against SOCIAL_RATE_LIMIT_COUNT per window, apart from friend requests (429).',
  rest: { method: 'POST', path: `${PARTY}/invites`, status: 201 },
  request: toUser,
  response: partyInviteSchema,
  errors: [401, 403, 404, 409, 422, 429],
});

export const partiesJoin = operation('parties.join', {
  tag,
  summary:
    'Join an open party, or one whose pending invitation the caller holds (else 404 NOT_FOUND); 409 ALREADY_IN_PARTY for a caller in a party, 403 for a block either way with a member, 409 PARTY_FULL at max_size.',
  rest: { method: 'POST', path: `${PARTY}/join` },
  request: inParty,
  response: partySchema,
  errors: [401, 403, 404, 409, 422],
});

export const partiesLeave = operation('parties.leave', {
  tag,
  summary:
    'Leave the party: a leaving leader hands leadership to the longest-standing remaining member; the last member ends it.',
  rest: { method: 'POST', path: `${PARTY}/leave`, status: 204 },
  request: inParty,
  response: z.null(),
  errors: [401, 404, 422],
});

export const partiesKick = operation('parties.kick', {
  tag,
  summary: `The leader removes a member (not themselves: 422; leave instead). ${notFound}`,
  rest: { method: 'DELETE', path: `${PARTY}/members/:user_id`, status: 204 },
  request: toUser,
  response: z.null(),
  errors: [401, 403, 404, 422],
});

export const partiesSetLeader = operation('parties.setLeader', {
  tag,
  summary: `The leader hands leadership to another member. ${notFound}`,
  rest: { method: 'POST', path: `${PARTY}/leader` },
  request: toUser,
  response: partySchema,
  errors: [401, 403, 404, 422],
});

export const adminPartiesOfUser = operation('admin.parties.ofUser', {
  tag: 'admin',
  summary:
    'Moderators and admins (others 403 FORBIDDEN): the party a user is in, as its members see it; 404 NOT_FOUND when the user is in none or there is no such user.',
  rest: { method: 'GET', path: '/api/admin/users/:user_id/party' },
  role: 'moderator',
  request: z.object({ user_id: id }).strict(),
  response: partySchema,
  errors: [401, 403, 404],
});

const PARTY_MESSAGES = `${PARTY}/messages`;

export const chatSendToParty = operation('chat.sendToParty', {
  tag,
  summary: `Write to the party's chat (members only; 1-2000 characters after trimming, the text filter and the rate limit of world and group chat). Its chat.message event reaches every socket of every member, the sender's included, without chat.join. ${notFound}`,
  frame: true,
  rest: { method: 'POST', path: PARTY_MESSAGES, status: 201 },
  request: z.object({ party_id: id, body: messageBodySchema }).strict(),
  response: partyMessageSchema,
  errors: [401, 404, 422, 429],
});

export const chatPartyHistory = operation('chat.partyHistory', {
  tag,
  summary: `The party's chat, its whole history newest first (members only); \`before\` is the previous page's next_cursor. ${notFound}`,
  rest: { method: 'GET', path: PARTY_MESSAGES },
  request: z.object({ party_id: id, limit: listQuery.limit, before: listQuery.cursor }).strict(),
  response: pageOf(partyMessageSchema),
  errors: [401, 404, 422],
});

/**
 * In this order in the OpenAPI document: the chat's path comes before the routes that change who
 * is a member, so the REST fuzz reaches it while its user is still in the party it starts in.
 */
export const partyOperations = [
  partiesCreate,
  partiesMine,
  partiesGet,
  partiesUpdate,
  chatSendToParty,
  chatPartyHistory,
  partiesInvite,
  partiesJoin,
  partiesLeave,
  partiesKick,
  partiesSetLeader,
  adminPartiesOfUser,
] as const;

/** `party.updated`: the party as it is after a join, leave, kick, offline removal, leader change or PATCH. */
export interface PartyUpdatedEvent {
  party: Party;
}

/** `party.invite`: to the invitee, for each invitation and each renewal. */
export interface PartyInviteEvent {
  party_id: string;
  from: { user_id: string; username: string };
  expires_at: string;
}

/** `party.ended`: to the last member, when they leave (or are removed) and the party ends with them. */
export interface PartyEndedEvent {
  party_id: string;
}

/**
 * The parties' events, by server frame type: on each recipient's own user topic (every socket of
 * the user, recorded with `pos` and replayed by recovery), without subscribing.
 */
export interface PartyEventPayloads {
  'party.updated': PartyUpdatedEvent;
  'party.invite': PartyInviteEvent;
  'party.ended': PartyEndedEvent;
}
