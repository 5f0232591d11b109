import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';

/**
 * The social graph: friend requests and friendships, follows and blocks (docs/social.md). Every
 * operation targets another user by id: yourself answers 422, an id that names no user 404, and
 * a block in either direction refuses friend requests and follows with 403. Lists are keyset
 * pages, newest first.
 */

const id = z.string().max(64);
const target = z.object({ user_id: id }).strict();

export const socialUserSchema = z.object({ id: z.string(), username: z.string() });
export type SocialUser = z.infer<typeof socialUserSchema>;

export const friendshipStatusSchema = z.enum(['pending', 'accepted']);

export const friendRequestDirectionSchema = z.enum(['incoming', 'outgoing']);

export const friendRequestSchema = z.object({
  user: socialUserSchema,
  /** incoming: the user asked the caller; outgoing: the caller asked the user. */
  direction: friendRequestDirectionSchema,
  created_at: z.string(),
});
export type FriendRequest = z.infer<typeof friendRequestSchema>;

/** A friend, a follower, a followed user or a blocked user, with when the relation began. */
export const relatedUserSchema = z.object({ user: socialUserSchema, since: z.string() });
export type RelatedUser = z.infer<typeof relatedUserSchema>;

const friendshipAnswer = z.object({ status: friendshipStatusSchema });

const tag = 'social';

export const friendRequestsCreate = operation('friendRequests.create', {
  tag,
  summary:
    'Ask a user to be friends: 201 pending. When that user already asked the caller, this accepts their request instead: 200 accepted. Friend requests and follows share a per-user rate (SOCIAL_RATE_LIMIT_COUNT per window, 429).',
  rest: {
    method: 'POST',
    path: '/api/friends/requests',
    createdWhen: (answer: z.output<typeof friendshipAnswer>) => answer.status === 'pending',
  },
  request: target,
  response: friendshipAnswer,
  errors: [401, 403, 404, 409, 422, 429],
});

export const friendRequestsAccept = operation('friendRequests.accept', {
  tag,
  summary: "Accept the user's pending request to the caller.",
  rest: { method: 'POST', path: '/api/friends/requests/:user_id/accept' },
  request: target,
  response: z.object({ status: z.literal('accepted') }),
  errors: [401, 404, 409, 422],
});

export const friendRequestsDecline = operation('friendRequests.decline', {
  tag,
  summary: "Decline the user's pending request to the caller; the user is not told.",
  rest: { method: 'POST', path: '/api/friends/requests/:user_id/decline', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

export const friendRequestsCancel = operation('friendRequests.cancel', {
  tag,
  summary: "Withdraw the caller's pending request to the user.",
  rest: { method: 'DELETE', path: '/api/friends/requests/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

export const friendRequestsList = operation('friendRequests.list', {
  tag,
  summary:
    'Pending requests to the caller (incoming, the default) or from the caller (outgoing), newest first.',
  rest: { method: 'GET', path: '/api/friends/requests' },
  request: z.object({ direction: friendRequestDirectionSchema.default('incoming'), ...listQuery }).strict(),
  response: pageOf(friendRequestSchema),
  errors: [401, 422],
});

export const friendsList = operation('friends.list', {
  tag,
  summary: "The caller's friends, most recent friendship first.",
  rest: { method: 'GET', path: '/api/friends' },
  request: z.object(listQuery).strict(),
  response: pageOf(relatedUserSchema),
  errors: [401, 422],
});

export const friendsDelete = operation('friends.delete', {
  tag,
  summary: 'End a friendship; 404 when the user is not a friend.',
  rest: { method: 'DELETE', path: '/api/friends/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

export const followsPut = operation('follows.put', {
  tag,
  summary:
    'Follow a user (idempotent). Follows and friend requests share a per-user rate (SOCIAL_RATE_LIMIT_COUNT per window, 429).',
  rest: { method: 'PUT', path: '/api/follows/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 403, 404, 422, 429],
});

export const followsDelete = operation('follows.delete', {
  tag,
  summary: 'Stop following a user (idempotent).',
  rest: { method: 'DELETE', path: '/api/follows/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

const followList = z.object({ user_id: id, ...listQuery }).strict();
const listPrivacy =
  "The user's profile_visibility decides who may read it (403 otherwise); a block either way answers 404.";

export const followsFollowers = operation('follows.followers', {
  tag,
  summary: `Who follows the user, newest first. ${listPrivacy}`,
  rest: { method: 'GET', path: '/api/users/:user_id/followers' },
  request: followList,
  response: pageOf(relatedUserSchema),
  errors: [401, 403, 404, 422],
});

export const followsFollowing = operation('follows.following', {
  tag,
  summary: `Whom the user follows, newest first. ${listPrivacy}`,
  rest: { method: 'GET', path: '/api/users/:user_id/following' },
  request: followList,
  response: pageOf(relatedUserSchema),
  errors: [401, 403, 404, 422],
});

export const blocksPut = operation('blocks.put', {
  tag,
  summary:
    'Block a user (idempotent): ends friendship, pending requests and follows both ways, and their presence subscriptions to each other.',
  rest: { method: 'PUT', path: '/api/blocks/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

export const blocksDelete = operation('blocks.delete', {
  tag,
  summary: 'Unblock a user (idempotent); nothing the block ended comes back.',
  rest: { method: 'DELETE', path: '/api/blocks/:user_id', status: 204 },
  request: target,
  response: z.null(),
  errors: [401, 404, 422],
});

export const blocksList = operation('blocks.list', {
  tag,
  summary: 'The users the caller blocked, most recent first.',
  rest: { method: 'GET', path: '/api/blocks' },
  request: z.object(listQuery).strict(),
  response: pageOf(relatedUserSchema),
  errors: [401, 422],
});

export const socialOperations = [
  friendRequestsCreate,
  friendRequestsAccept,
  friendRequestsDecline,
  friendRequestsCancel,
  friendRequestsList,
  friendsList,
  friendsDelete,
  followsPut,
  followsDelete,
  followsFollowers,
  followsFollowing,
  blocksPut,
  blocksDelete,
  blocksList,
] as const;

/** `social.friend_request`: pushed to the addressee of a new request. */
export interface FriendRequestEvent {
  from: SocialUser;
  created_at: string;
}

/** `social.friend_accepted` (to the requester) and `social.friend_removed` (to the other friend). */
export interface FriendChangeEvent {
  user: SocialUser;
}

/** The social graph's events, by server frame type: sent to each of a user's sockets, without subscribing. */
export interface SocialEventPayloads {
  'social.friend_request': FriendRequestEvent;
  'social.friend_accepted': FriendChangeEvent;
  'social.friend_removed': FriendChangeEvent;
}
