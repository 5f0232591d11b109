import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';

/**
 * Dedicated game servers (docs/gameservers.md). A world's owner (or an admin) spawns and stops
 * servers; any user who may read a world joins it, which hands out the address of a ready server
 * with room, starting one when there is none. A user holds one join reservation at a time. A
 * server is ready only once it reports `ready: true` itself (or Agones says Ready), never because
 * a port opened.
 */

export const gameServerStatusSchema = z.enum(['starting', 'ready', 'failed', 'stopped']);
export type GameServerStatus = z.infer<typeof gameServerStatusSchema>;

/**
 * Who may join a server (docs/gameservers.md, "Instance access"): whoever may read its world, its
 * owner's friends and the users the owner invited, or the owner's invitees alone.
 */
export const serverAccessSchema = z.enum(['public', 'friends', 'invite']);
export type ServerAccess = z.infer<typeof serverAccessSchema>;

/** The longest address a server may report (`host:port`). */
export const GAMESERVER_ADDRESS_MAX = 255;

export const gameServerSchema = z.object({
  server_id: z.string(),
  world_id: z.string(),
  status: gameServerStatusSchema,
  /** `host:port` once ready; null before. */
  address: z.string().nullable(),
  /** Why it failed (or stopped on its own); null otherwise. */
  error: z.string().nullable(),
  /**
   * Its players as it last reported them, plus the join reservations made since (each user
   * counts once; docs/gameservers.md, "Reservations").
   */
  players: z.number().int(),
  max_players: z.number().int(),
  backend: z.enum(['local', 'agones']),
  /** Who may join it: `public` (whoever may read the world), `friends` or `invite`. */
  access: serverAccessSchema,
  /**
   * The user who started it: the joining user for a server a join started, the spawner for one
   * started by POST /api/worlds/{world_id}/servers; null once their account is deleted.
   */
  owner_id: z.string().nullable(),
  created_at: z.string(),
  ready_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  /** Until when a starting server may take to report ready before it fails. */
  ready_deadline_at: z.string(),
});
export type GameServer = z.infer<typeof gameServerSchema>;

const tag = 'gameservers';
const id = z.string().max(64);

export const gameServersSpawn = operation('gameservers.spawn', {
  tag,
  summary:
    'Start a dedicated game server for the world (owner or admin). Answers 202 at once with status starting; poll GET /api/servers/{server_id} (or join) for ready, failed past the readiness deadline. Spawn limits: 409 QUOTA_EXCEEDED past the live servers one user may have started, 429 RATE_LIMITED past the spawn rate, 503 GAMESERVER_CAPACITY when the node has no slot for this user.',
  rest: { method: 'POST', path: '/api/worlds/:world_id/servers', status: 202 },
  request: z.object({ world_id: id }).strict(),
  response: gameServerSchema,
  errors: [401, 403, 404, 409, 429, 503],
});

export const gameServersGet = operation('gameservers.get', {
  tag,
  summary: "A game server's state (owner of its world, admin, or the user who started it).",
  rest: { method: 'GET', path: '/api/servers/:server_id' },
  request: z.object({ server_id: id }).strict(),
  response: gameServerSchema,
  errors: [401, 404],
});

export const gameServersStop = operation('gameservers.stop', {
  tag,
  summary:
    'Stop a game server (owner of its world or admin): its token dies at once and its process or GameServer is stopped. Stopping an ended server changes nothing.',
  rest: { method: 'DELETE', path: '/api/servers/:server_id', status: 204 },
  request: z.object({ server_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404],
});

export const worldJoinSchema = z.object({
  server_id: z.string(),
  world_id: z.string(),
  /** Where the client connects: `host:port` of a ready server. */
  address: z.string(),
});

/**
 * Where a party join put the party (docs/gameservers.md, "Joining together"): the one server, and
 * the members placed on it, the leader included, longest-standing first.
 */
export const partyPlacementSchema = z.object({
  server_id: z.string(),
  user_ids: z.array(z.string()),
});
export type PartyPlacement = z.infer<typeof partyPlacementSchema>;

/** A join's answer: a party join (`party: true`) adds where it put the party. */
export const worldJoinAnswerSchema = worldJoinSchema.extend({
  /** Present on a party join alone. */
  party_placement: partyPlacementSchema.optional(),
});

export const worldsJoin = operation('worlds.join', {
  tag,
  summary:
    "The address of a ready game server of the world for the caller, where the caller's one reservation moves. The body is optional. Without it (or with access public) the join chooses among the world's public servers: the one the caller already holds a reservation on, or the fullest with room; with none, it starts one (concurrent joins share it; the spawn limits of gameservers.spawn apply, 409 or 429) and waits for it within the readiness deadline. access friends or invite takes the fullest live server of the world the caller owns with that access and room, else starts one the caller owns. server_id names the server: a starting or ready server of this world (else 404), which must admit the caller (403 INSTANCE_RESTRICTED) and have room (409 SERVER_FULL, unless the caller holds a place there). access and server_id together are 422. party: true (the party's leader) places the leader and every member online now on one server in one step: the fullest ready or starting server the access rules allow for all of them with room for all (with server_id: that one), else a new one the leader starts; every placed member's reservation moves there, with access friends or invite each counts as invited, and the answer adds party_placement {server_id, user_ids}. Once the server is ready the other placed members get party.follow and join it with {server_id}, reusing their place. Party refusals, in order, writing nothing: in no party 409 NOT_IN_PARTY, not its leader 403 FORBIDDEN, more placed members than GAMESERVER_MAX_PLAYERS or (server_id) a server without room for all 409 NO_ROOM_FOR_PARTY, a placed member the access refuses 403 INSTANCE_RESTRICTED. 503 GAMESERVER_UNAVAILABLE when the server fails, GAMESERVER_CAPACITY when none can be started.",
  rest: { method: 'POST', path: '/api/worlds/:world_id/join', optionalBody: true },
  request: z
    .object({
      world_id: id,
      /** The access of the server to join or start (default public); not with server_id. */
      access: serverAccessSchema.optional(),
      /** The server to join, a starting or ready server of this world; not with access. */
      server_id: id.optional(),
      /** True: the caller, the party's leader, takes the party's online members along (default false). */
      party: z.boolean().optional(),
    })
    .strict(),
  response: worldJoinAnswerSchema,
  errors: [401, 403, 404, 409, 422, 429, 503],
});

export const gameServerReportSchema = z
  .object({
    /** True once the server accepts players; a server is never ready otherwise. */
    ready: z.boolean(),
    /** `host:port` clients connect to; required with ready: true. */
    address: z
      .string()
      .max(GAMESERVER_ADDRESS_MAX)
      // biome-ignore lint/complexity/noUselessEscapeInRegex: the OpenAPI document states this pattern, and Rust's regex reads a bare [ in a class as a nested class.
      .regex(/^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$/, 'must be host:port')
      .optional(),
    /** How many players it has now. */
    players: z.number().int().min(0).max(1_000_000).optional(),
  })
  .strict();

export const internalStatusReport = operation('internal.servers.status', {
  tag: 'internal',
  summary:
    'A game server reports on itself with its server token: ready (with its address) and its player count. The first ready: true within the readiness deadline makes it ready; after the deadline the token is dead (401). ready: false changes only the player count.',
  gameServer: true,
  rest: { method: 'PUT', path: '/internal/servers/self/status' },
  request: gameServerReportSchema,
  response: gameServerSchema,
  errors: [401, 422],
});

/** A status filter of the administration list: a status, or `running` for starting and ready ones. */
export const gameServerStatusFilterSchema = z.enum(['running', ...gameServerStatusSchema.options]);
export type GameServerStatusFilter = z.infer<typeof gameServerStatusFilterSchema>;

/** A server as the administration list shows it: who started it and whose world it serves. */
export const adminGameServerSchema = gameServerSchema.extend({
  /** The account that started it (its world's owner, an admin, or a join); null once deleted. */
  requested_by: z.string().nullable(),
  world_owner_id: z.string(),
});
export type AdminGameServer = z.infer<typeof adminGameServerSchema>;

export const adminServersList = operation('admin.servers.list', {
  tag: 'admin',
  summary:
    'Every game server, newest first, ended ones included (admins; others 403 FORBIDDEN): status, world and its owner, who started it, backend, address, times and the last error. `status` keeps one status (`running`: starting and ready), `world_id` one world. `players` is the count the server last reported.',
  rest: { method: 'GET', path: '/api/admin/servers' },
  request: z
    .object({ status: gameServerStatusFilterSchema.optional(), world_id: id.optional(), ...listQuery })
    .strict(),
  response: pageOf(adminGameServerSchema),
  errors: [401, 403, 422],
});

/** An invitation to a server: it admits its user to that server as long as the server lives. */
export const serverInvitationSchema = z.object({
  server_id: z.string(),
  user_id: z.string(),
  /** The server's owner, who alone invites. */
  invited_by: z.string(),
  created_at: z.string(),
});
export type ServerInvitation = z.infer<typeof serverInvitationSchema>;

// Instance invitations and the join of a friend are REST operations; the contract names their
// socket twins, should they be added, under `parties.`: so are the operations, a frame's type
// being its operation's name.
export const serversInvite = operation('parties.inviteToServer', {
  tag,
  summary:
    "Invite a user to a server the caller owns: the invitation admits them to it while it lives, whatever its access (a block either way with the owner still refuses on friends and invite servers). 404 NOT_FOUND for no such server, 403 FORBIDDEN for a caller who is not its owner; the invitee being the caller is 422, unknown 404, blocked either way with the owner 403 FORBIDDEN; an ended server 409 CONFLICT. Inviting again answers 201 and changes nothing else. Invitations count against the caller's SOCIAL_RATE_LIMIT_COUNT per SOCIAL_RATE_LIMIT_WINDOW_SECONDS (429). The invitee gets server.invite.",
  rest: { method: 'POST', path: '/api/servers/:server_id/invites', status: 201 },
  request: z.object({ server_id: id, user_id: id }).strict(),
  response: serverInvitationSchema,
  errors: [401, 403, 404, 409, 422, 429],
});

export const usersJoinFriend = operation('parties.joinFriend', {
  tag,
  summary:
    "Join a friend: the caller's reservation moves to the server of the friend's latest reservation while that server is starting or ready and the friend is online (a starting server is waited for, as a join waits). Checked in this order: the caller's own id 422; unknown user 404; not friends, or the friend's presence_visibility hides them, 403 FORBIDDEN; the friend offline or on no such server 409 NOT_IN_WORLD; the caller may not read the world, or the server's access refuses them, 403 INSTANCE_RESTRICTED; the server full (the caller holding no place there) 409 SERVER_FULL. A refusal writes nothing.",
  rest: { method: 'POST', path: '/api/users/:user_id/join' },
  request: z.object({ user_id: id }).strict(),
  response: worldJoinSchema,
  errors: [401, 403, 404, 409, 422, 503],
});

/** `server.invite`: pushed to the invited user when an invitation is made. */
export interface ServerInviteEvent {
  server_id: string;
  world_id: string;
  from: { user_id: string; username: string };
}

/**
 * `party.follow`: to each member a party join placed on a server, the leader aside, once that
 * server is ready. Their join of the world with `{server_id}` reuses the place held for them.
 */
export interface PartyFollowEvent {
  party_id: string;
  world_id: string;
  server_id: string;
}

/** Game servers' events, by server frame type: sent to each of the user's sockets, without subscribing. */
export interface GameServerEventPayloads {
  'server.invite': ServerInviteEvent;
  'party.follow': PartyFollowEvent;
}

export const gameServerOperations = [
  gameServersSpawn,
  gameServersGet,
  gameServersStop,
  worldsJoin,
  adminServersList,
  serversInvite,
  usersJoinFriend,
] as const;
