import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import { AtriumClient, type FetchLike } from '../../protocol/client.js';
import { type Operation, pathParams, type RestBinding } from '../../protocol/operation.js';
import { operations } from '../../protocol/operations.js';
import { newId } from '../../src/platform/ids.js';
import { launchesOf, recordingCommand } from '../gameservers/gameservers.js';
import { bearer, PASSWORD, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { adminRows } from './parity-admin.js';
import { economyRows } from './parity-economy.js';
import { leaderboardRows } from './parity-leaderboards.js';
import { notificationRows } from './parity-notifications.js';
import { partyRows } from './parity-parties.js';
import type { Accounts, RestName, Row, Run } from './parity-types.js';
import { webhookRows } from './parity-webhooks.js';

/**
 * Every operation with a REST twin, run once over plain REST and once through AtriumClient: over
 * its socket where the operation is a frame, over its REST path otherwise. Both answers must be
 * equal once volatile fields are normalised. A new operation with `rest` must add its row here.
 */

const rows: { [N in RestName]: Row<N> } = {
  ...economyRows(() => app),
  ...adminRows(() => app),
  ...notificationRows(() => app),
  ...partyRows(() => app),
  ...webhookRows(() => app),
  ...leaderboardRows(
    () => app,
    async (me) => (await readyServer(me)).token,
  ),
  'auth.register': {
    fresh: true,
    prepare: () => ({
      input: { username: uniqueUsername(), password: PASSWORD, accept_terms: true, confirm_18_plus: true },
    }),
  },
  'auth.login': {
    fresh: true,
    prepare: async () => {
      const { user } = await registerUser(app);
      return { input: { username: user.username, password: PASSWORD } };
    },
  },
  'auth.refresh': {
    fresh: true,
    prepare: async () => ({ input: { refresh_token: (await registerUser(app)).refresh_token } }),
  },
  'auth.logout': {
    prepare: async () => ({ input: { refresh_token: (await registerUser(app)).refresh_token } }),
  },
  'users.me': { prepare: ({ me }) => ({ token: me.access_token }) },
  'users.deleteMe': {
    prepare: async () => ({ token: (await registerUser(app)).access_token, input: { password: PASSWORD } }),
  },
  'users.get': {
    prepare: ({ me, other }) => ({ token: me.access_token, input: { user_id: other.user.id } }),
  },
  'presence.heartbeat': { prepare: ({ me }) => ({ token: me.access_token }) },
  'presence.query': {
    prepare: ({ me, other }) => ({
      token: me.access_token,
      input: { user_ids: [me.user.id, other.user.id, 'nobody'] },
    }),
  },
  'presence.status': {
    prepare: ({ me }) => ({ token: me.access_token, input: { status_message: '  comparing transports  ' } }),
  },
  'profile.get': { prepare: ({ me }) => ({ token: me.access_token }) },
  'profile.update': {
    prepare: ({ me }) => ({
      token: me.access_token,
      input: { bio: 'parity', privacy: { favorites_visibility: 'friends' } },
    }),
  },
  'avatar.getLoadout': { prepare: ({ me }) => ({ token: me.access_token }) },
  'avatar.putLoadout': {
    prepare: ({ me }) => ({
      token: me.access_token,
      input: { base_body: 'base_human_female_01', slots: { hat: { id: 'cap', tint: [1, 0.5, 0] } } },
    }),
  },
  'worlds.create': {
    fresh: true,
    prepare: ({ me }) => ({ token: me.access_token, input: { name: 'Parity', visibility: 'unlisted' } }),
  },
  'worlds.get': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_id: await sharedWorld(me) } }),
  },
  'worlds.update': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: await sharedWorld(me), description: 'compared over both transports' },
    }),
  },
  'worlds.delete': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_id: await parityWorld(me) } }),
  },
  'rooms.list': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: await sharedWorld(me), limit: 10 },
    }),
  },
  'rooms.create': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: await parityWorld(me), name: 'lobby' },
    }),
  },
  'rooms.get': {
    prepare: async ({ me }) => {
      const world_id = await sharedWorld(me);
      return { token: me.access_token, input: { world_id, room_id: await mainRoom(me, world_id) } };
    },
  },
  'rooms.update': {
    fresh: true,
    prepare: async ({ me }) => {
      const world_id = await parityWorld(me);
      const room = await app.http.inject({
        method: 'POST',
        url: `/api/worlds/${world_id}/rooms`,
        headers: bearer(me.access_token),
        payload: { name: 'hall' },
      });
      return { token: me.access_token, input: { world_id, room_id: room.json().id, name: 'great hall' } };
    },
  },
  'rooms.delete': {
    prepare: async ({ me }) => {
      const world_id = await sharedWorld(me);
      const room = await app.http.inject({
        method: 'POST',
        url: `/api/worlds/${world_id}/rooms`,
        headers: bearer(me.access_token),
        payload: { name: uniqueUsername() },
      });
      return { token: me.access_token, input: { world_id, room_id: room.json().id } };
    },
  },
  'revisions.list': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_id: await worldWithRevision(me) } }),
  },
  'worlds.rollback': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: await parityWorld(me), revision: 0 },
    }),
  },
  'chunks.list': {
    prepare: async ({ me }) => {
      const world_id = await sharedWorld(me);
      return { token: me.access_token, input: { world_id, room_id: await mainRoom(me, world_id) } };
    },
  },
  'favorites.get': { prepare: ({ me }) => ({ token: me.access_token }) },
  'favorites.put': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_ids: [await sharedWorld(me)] } }),
  },
  // A request when the other user asked first accepts theirs: 200, where a new request is 201.
  'friendRequests.create': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { user_id: (await askerOf(me)).user.id } }),
  },
  'friendRequests.accept': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { user_id: (await askerOf(me)).user.id } }),
  },
  'friendRequests.decline': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { user_id: (await askerOf(me)).user.id } }),
  },
  'friendRequests.cancel': {
    prepare: async ({ me }) => {
      const asked = await registerUser(app);
      await social(me, 'POST', '/api/friends/requests', { user_id: asked.user.id });
      return { token: me.access_token, input: { user_id: asked.user.id } };
    },
  },
  'friendRequests.list': {
    prepare: async () => ({ token: (await socialCircle()).access_token, input: { direction: 'incoming' } }),
  },
  'friends.list': {
    prepare: async () => ({ token: (await socialCircle()).access_token, input: { limit: 5 } }),
  },
  'friends.delete': {
    prepare: async ({ me }) => {
      const friend = await askerOf(me);
      await social(me, 'POST', `/api/friends/requests/${friend.user.id}/accept`);
      return { token: me.access_token, input: { user_id: friend.user.id } };
    },
  },
  'follows.put': {
    prepare: ({ me, other }) => ({ token: me.access_token, input: { user_id: other.user.id } }),
  },
  'follows.delete': {
    prepare: ({ me, other }) => ({ token: me.access_token, input: { user_id: other.user.id } }),
  },
  'follows.followers': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { user_id: (await socialCircle()).user.id },
    }),
  },
  'follows.following': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { user_id: (await socialCircle()).user.id },
    }),
  },
  'blocks.put': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { user_id: (await registerUser(app)).user.id },
    }),
  },
  'blocks.delete': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { user_id: (await registerUser(app)).user.id },
    }),
  },
  'blocks.list': { prepare: async () => ({ token: (await socialCircle()).access_token }) },
  // Each run sends a message of its own: only its id differs.
  'dm.send': {
    fresh: true,
    prepare: ({ me, other }) => ({
      token: me.access_token,
      input: { user_id: other.user.id, body: ' parity ' },
    }),
  },
  'dm.history': {
    prepare: async () => {
      const { sender, recipient } = await dmPair();
      return { token: sender.access_token, input: { user_id: recipient.user.id } };
    },
  },
  'dm.conversations': {
    prepare: async () => ({ token: (await dmPair()).recipient.access_token }),
  },
  // Each run is a new user's report of the same message: only who reports and the report's id differ.
  'reports.create': {
    fresh: true,
    prepare: async () => ({
      token: (await registerUser(app)).access_token,
      input: { message_id: (await reported()).messageId, reason: ' parity ', details: 'compared' },
    }),
  },
  'reports.list': { prepare: async () => ({ token: (await reported()).moderator.access_token }) },
  'reports.update': {
    fresh: true,
    prepare: async () => {
      const { moderator, messageId } = await reported();
      return {
        token: moderator.access_token,
        input: { report_id: await newReport(messageId), state: 'dismissed', note: 'parity' },
      };
    },
  },
  // Each run writes a message of its own: only its id differs.
  'chat.sendToWorld': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: await sharedWorld(me), body: ' parity ' },
    }),
  },
  'chat.sendToRoom': {
    fresh: true,
    prepare: async ({ me }) => {
      const world_id = await sharedWorld(me);
      return {
        token: me.access_token,
        input: { world_id, room_id: await mainRoom(me, world_id), body: ' parity ' },
      };
    },
  },
  'chat.worldHistory': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: (await chatWorld(me)).world_id },
    }),
  },
  'chat.roomHistory': {
    prepare: async ({ me }) => ({ token: me.access_token, input: await chatWorld(me) }),
  },
  'discovery.get': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_id: await sharedWorld(me) } }),
  },
  'discovery.put': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: {
        world_id: await parityWorld(me),
        title: 'Parity',
        tags: ['Same', 'same', 'other'],
        category: 'creative',
      },
    }),
  },
  'discovery.search': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { sort: 'new', tag: [await taggedWorld(me)] },
    }),
  },
  // Groups: a run acts on a group of its own where it changes one; reads share one built once.
  'groups.create': {
    fresh: true,
    prepare: ({ me }) => ({
      token: me.access_token,
      input: { name: groupName(), description: 'parity', join_policy: 'closed' },
    }),
  },
  'groups.get': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { group_id: (await groupCircle()).groupId },
    }),
  },
  'groups.update': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { group_id: await newGroup(me), description: 'changed', join_policy: 'closed' },
    }),
  },
  'groups.delete': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { group_id: await newGroup(me) } }),
  },
  'groups.search': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { q: (await groupCircle()).name, limit: 5 },
    }),
  },
  'groups.mine': { prepare: async () => ({ token: (await groupCircle()).owner.access_token }) },
  'groups.members': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { group_id: (await groupCircle()).groupId },
    }),
  },
  'groups.requests': {
    prepare: async () => {
      const { owner, groupId } = await groupCircle();
      return { token: owner.access_token, input: { group_id: groupId } };
    },
  },
  'groups.join': {
    prepare: async ({ me, other }) => ({
      token: me.access_token,
      input: { group_id: await newGroup(other, 'closed') },
    }),
  },
  'groups.approve': {
    fresh: true,
    prepare: async ({ me }) => {
      const group_id = await newGroup(me, 'closed');
      const user_id = await joiner(group_id);
      return { token: me.access_token, input: { group_id, user_id } };
    },
  },
  'groups.decline': {
    prepare: async ({ me }) => {
      const group_id = await newGroup(me, 'closed');
      return { token: me.access_token, input: { group_id, user_id: await joiner(group_id) } };
    },
  },
  'groups.removeMember': {
    prepare: async ({ me }) => {
      const group_id = await newGroup(me);
      return { token: me.access_token, input: { group_id, user_id: await joiner(group_id) } };
    },
  },
  'groups.setRole': {
    fresh: true,
    prepare: async ({ me }) => {
      const group_id = await newGroup(me);
      return { token: me.access_token, input: { group_id, user_id: await joiner(group_id), role: 'admin' } };
    },
  },
  'groups.transfer': {
    fresh: true,
    prepare: async ({ me }) => {
      const group_id = await newGroup(me);
      return { token: me.access_token, input: { group_id, user_id: await joiner(group_id) } };
    },
  },
  'groups.claim': {
    fresh: true,
    prepare: async () => {
      const owner = await registerUser(app);
      const group_id = await newGroup(owner);
      const admin = await registerUser(app);
      await api(admin, 'POST', `/api/groups/${group_id}/members`);
      await api(owner, 'PATCH', `/api/groups/${group_id}/members/${admin.user.id}`, { role: 'admin' });
      await api(owner, 'DELETE', '/api/users/me', { password: PASSWORD });
      return { token: admin.access_token, input: { group_id } };
    },
  },
  'chat.sendToGroup': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { group_id: await myGroup(me), body: ' parity ' },
    }),
  },
  'chat.groupHistory': {
    prepare: async () => {
      const { owner, groupId } = await groupCircle();
      return { token: owner.access_token, input: { group_id: groupId } };
    },
  },
  // Game servers: real reference servers, started by the app under test.
  'gameservers.spawn': {
    fresh: true,
    prepare: async ({ me }) => ({ token: me.access_token, input: { world_id: await parityWorld(me) } }),
  },
  'gameservers.get': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { server_id: (await readyServer(me)).serverId },
    }),
  },
  'gameservers.stop': {
    fresh: true,
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { server_id: await spawned(me, await parityWorld(me)) },
    }),
  },
  'worlds.join': {
    prepare: async ({ me }) => ({
      token: me.access_token,
      input: { world_id: (await readyServer(me)).worldId },
    }),
  },
  // Inviting again answers the invitation the first run made.
  'parties.inviteToServer': {
    prepare: async ({ me, other }) => ({
      token: me.access_token,
      input: { server_id: (await readyServer(me)).serverId, user_id: other.user.id },
    }),
  },
  // Both runs join the same friend, on the server they are on: the second keeps the first's place.
  'parties.joinFriend': {
    prepare: async ({ me }) => ({ token: me.access_token, input: { user_id: await friendOnServer(me) } }),
  },
  'internal.worlds.get': {
    prepare: async ({ me }) => {
      const { token, worldId } = await readyServer(me);
      return { token, input: { world_id: worldId } };
    },
  },
  'internal.rooms.list': {
    prepare: async ({ me }) => {
      const { token, worldId } = await readyServer(me);
      return { token, input: { world_id: worldId, limit: 10 } };
    },
  },
  'internal.servers.status': {
    prepare: async ({ me }) => {
      const { token, address } = await readyServer(me);
      return { token, input: { ready: true, address, players: 0 } };
    },
  },
};

/** Starts a game server for the world; answers its id. */
async function spawned(me: TokenResponse, worldId: string): Promise<string> {
  const response = await app.http.inject({
    method: 'POST',
    url: `/api/worlds/${worldId}/servers`,
    headers: bearer(me.access_token),
  });
  expect(response.statusCode, response.body).toBe(202);
  return response.json().server_id;
}

let serverOnce: Promise<{ serverId: string; worldId: string; token: string; address: string }> | undefined;
/** A ready game server of the shared world, started once; its token is read from its launch arguments. */
function readyServer(me: TokenResponse) {
  serverOnce ??= (async () => {
    const worldId = await sharedWorld(me);
    const serverId = await spawned(me, worldId);
    const address = await vi.waitFor(
      async () => {
        const server = (
          await app.http.inject({
            method: 'GET',
            url: `/api/servers/${serverId}`,
            headers: bearer(me.access_token),
          })
        ).json();
        expect(server.status).toBe('ready');
        return server.address as string;
      },
      { timeout: 15_000, interval: 50 },
    );
    const token = launchesOf(gameServerLaunches.dir, worldId)[0]?.['server-token'] as string;
    return { serverId, worldId, token, address };
  })();
  return serverOnce;
}

let friendOnce: Promise<string> | undefined;
/** A friend of `me`'s, online, who joined a public world of theirs (its server ready): answers their id. */
function friendOnServer(me: TokenResponse): Promise<string> {
  friendOnce ??= (async () => {
    const friend = await askerOf(me);
    await social(me, 'POST', `/api/friends/requests/${friend.user.id}/accept`);
    const { worldId } = await createWorld(app, friend.access_token, {
      name: 'Friend world',
      visibility: 'public',
    });
    await api(friend, 'POST', `/api/worlds/${worldId}/join`);
    await api(friend, 'POST', '/api/presence/heartbeat');
    return friend.user.id;
  })();
  return friendOnce;
}

let reportedOnce: Promise<{ moderator: TokenResponse; messageId: string }> | undefined;
/** A moderator, and a message of a public world with an open report, made once for the report rows. */
function reported() {
  reportedOnce ??= (async () => {
    const [owner, moderator] = [await registerUser(app), await registerWithRole(app, 'moderator')];
    const world = await app.http.inject({
      method: 'POST',
      url: '/api/worlds',
      headers: bearer(owner.access_token),
      payload: { name: 'Reported', visibility: 'public' },
    });
    const messageId = newId();
    // Written as a row: how world chat stores messages is not what the report rows compare.
    await queryRows(app.db, 'insert into messages (id, world_id, sender_id, body) values (?, ?, ?, ?)', [
      messageId,
      world.json().id,
      owner.user.id,
      'reported',
    ]);
    await newReport(messageId);
    return { moderator, messageId };
  })();
  return reportedOnce;
}

/** A new user's open report of the message; answers its id. */
async function newReport(messageId: string): Promise<string> {
  const response = await app.http.inject({
    method: 'POST',
    url: `/api/chat/messages/${messageId}/reports`,
    headers: bearer((await registerUser(app)).access_token),
    payload: { reason: 'parity' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

let pair: Promise<{ sender: TokenResponse; recipient: TokenResponse }> | undefined;
/** Two users with a conversation of two messages, written once for both runs of the DM list rows. */
function dmPair() {
  pair ??= (async () => {
    const [sender, recipient] = [await registerUser(app), await registerUser(app)];
    for (const body of ['first', 'second']) {
      const response = await app.http.inject({
        method: 'POST',
        url: `/api/chat/dm/${recipient.user.id}/messages`,
        headers: bearer(sender.access_token),
        payload: { body },
      });
      expect(response.statusCode, response.body).toBe(201);
    }
    return { sender, recipient };
  })();
  return pair;
}

let chatted: Promise<{ world_id: string; room_id: string }> | undefined;
/** A world with two messages in its own chat and two in its main room's, written once for both runs of the history rows. */
function chatWorld(me: TokenResponse) {
  chatted ??= (async () => {
    const world_id = await parityWorld(me);
    const room_id = await mainRoom(me, world_id);
    for (const url of [
      `/api/worlds/${world_id}/messages`,
      `/api/worlds/${world_id}/rooms/${room_id}/messages`,
    ]) {
      for (const body of ['first', 'second']) {
        const response = await app.http.inject({
          method: 'POST',
          url,
          headers: bearer(me.access_token),
          payload: { body },
        });
        expect(response.statusCode, response.body).toBe(201);
      }
    }
    return { world_id, room_id };
  })();
  return chatted;
}

/** A request made while preparing a row; it must succeed. Answers the JSON body, if any. */
async function api(user: TokenResponse, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const response = await app.http.inject({
    method,
    url,
    headers: bearer(user.access_token),
    ...(payload ? { payload } : {}),
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.body ? response.json() : undefined;
}

const groupName = () => `Parity ${newId().slice(-12)}`;

/** A new group of the user; answers its id. */
async function newGroup(owner: TokenResponse, join_policy: 'open' | 'closed' = 'open'): Promise<string> {
  return (await api(owner, 'POST', '/api/groups', { name: groupName(), join_policy })).id;
}

/** A new user who joined (or asked to join) the group; answers their id. */
async function joiner(groupId: string): Promise<string> {
  const user = await registerUser(app);
  await api(user, 'POST', `/api/groups/${groupId}/members`);
  return user.user.id;
}

let groupOnce: Promise<{ owner: TokenResponse; groupId: string; name: string }> | undefined;
/** A closed group with an admin, a member, a pending request and two chat messages, built once for the read rows. */
function groupCircle() {
  groupOnce ??= (async () => {
    const owner = await registerUser(app);
    const name = groupName();
    const groupId = (await api(owner, 'POST', '/api/groups', { name, description: 'read twice' })).id;
    const admin = await joiner(groupId);
    await joiner(groupId);
    await api(owner, 'PATCH', `/api/groups/${groupId}/members/${admin}`, { role: 'admin' });
    await api(owner, 'PATCH', `/api/groups/${groupId}`, { join_policy: 'closed' });
    await joiner(groupId);
    for (const body of ['first', 'second'])
      await api(owner, 'POST', `/api/groups/${groupId}/messages`, { body });
    return { owner, groupId, name };
  })();
  return groupOnce;
}

let tagged: Promise<string> | undefined;
/** A public world with a tag of its own, made once: both search runs find it alone. Answers the tag. */
function taggedWorld(me: TokenResponse): Promise<string> {
  tagged ??= (async () => {
    const tag = `parity-${newId().slice(-8)}`;
    const worldId = await parityWorld(me);
    await api(me, 'PATCH', `/api/worlds/${worldId}`, { visibility: 'public' });
    const put = await app.http.inject({
      method: 'PUT',
      url: `/api/worlds/${worldId}/discovery`,
      headers: bearer(me.access_token),
      payload: { tags: [tag] },
    });
    expect(put.statusCode, put.body).toBe(200);
    return tag;
  })();
  return tagged;
}

let mine: Promise<string> | undefined;
/** A group of the socket user, for the frame rows that write to its chat. */
function myGroup(me: TokenResponse): Promise<string> {
  mine ??= newGroup(me);
  return mine;
}

/** A social graph write made by `user` while preparing a row; it must succeed. */
async function social(user: TokenResponse, method: 'POST' | 'PUT', url: string, payload?: object) {
  const response = await app.http.inject({
    method,
    url,
    headers: bearer(user.access_token),
    ...(payload ? { payload } : {}),
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
}

/** A new user who asked `me` to be friends: each run answers a request of its own. */
async function askerOf(me: TokenResponse): Promise<TokenResponse> {
  const asker = await registerUser(app);
  await social(asker, 'POST', '/api/friends/requests', { user_id: me.user.id });
  return asker;
}

let circle: Promise<TokenResponse> | undefined;
/** A user with a friend, an incoming request, a follow each way and a block, built once for both runs of the list rows. */
function socialCircle(): Promise<TokenResponse> {
  circle ??= (async () => {
    const owner = await registerUser(app);
    const friend = await askerOf(owner);
    await social(owner, 'POST', `/api/friends/requests/${friend.user.id}/accept`);
    const asker = await askerOf(owner);
    await social(owner, 'PUT', `/api/follows/${friend.user.id}`);
    await social(asker, 'PUT', `/api/follows/${owner.user.id}`);
    await social(owner, 'PUT', `/api/blocks/${(await registerUser(app)).user.id}`);
    return owner;
  })();
  return circle;
}

/** A world of `me`'s; answers its id. */
const parityWorld = async (me: TokenResponse) =>
  (await createWorld(app, me.access_token, { name: 'Parity world' })).worldId;

let shared: Promise<string> | undefined;
/** One world both runs of a row read, so their answers can be equal. */
function sharedWorld(me: TokenResponse): Promise<string> {
  shared ??= parityWorld(me);
  return shared;
}

let withRevision: Promise<string> | undefined;
/** A world with one chunk revision, written once, so both runs list the same item. */
function worldWithRevision(me: TokenResponse): Promise<string> {
  withRevision ??= (async () => {
    const worldId = await parityWorld(me);
    const put = await app.http.inject({
      method: 'PUT',
      url: `/api/worlds/${worldId}/rooms/${await mainRoom(me, worldId)}/chunks/0/0/0`,
      headers: {
        ...bearer(me.access_token),
        'content-type': 'application/octet-stream',
        'if-none-match': '*',
      },
      payload: Buffer.from(encodeChunk({ objects: [] })),
    });
    expect(put.statusCode, put.body).toBe(200);
    return worldId;
  })();
  return withRevision;
}

async function mainRoom(me: TokenResponse, worldId: string): Promise<string> {
  const response = await app.http.inject({
    method: 'GET',
    url: `/api/worlds/${worldId}`,
    headers: bearer(me.access_token),
  });
  return response.json().rooms[0].id;
}

const VOLATILE_TOKENS = new Set(['access_token', 'refresh_token', 'secret']);
const USER_NAMES = new Set([
  'id',
  'username',
  'user_id',
  'world_id',
  'reporter_id',
  'server_id',
  'group_id',
  'owner_id',
  'leader_id',
  'party_id',
  'invited_by',
  'name',
]);
/** Ids of ledger transactions, which each run of a money-moving row makes anew. */
const TRANSACTION_IDS = new Set(['transaction_id', 'refund_transaction_id']);

/** Replaces timestamps and tokens (and, for fresh-user rows, who the user is) with placeholders. */
function normalise(value: unknown, fresh: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => normalise(item, fresh));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => {
      if (typeof item === 'string' && (key.endsWith('_at') || key.endsWith('_until'))) return [key, '<time>'];
      if (VOLATILE_TOKENS.has(key)) return [key, '<token>'];
      if (fresh && USER_NAMES.has(key)) return [key, '<fresh user>'];
      if (fresh && TRANSACTION_IDS.has(key) && item !== null) return [key, '<transaction>'];
      return [key, normalise(item, fresh)];
    }),
  );
}

/** Plain REST, built here from the catalogue rather than by the client, so the client is checked against it. */
async function overRest(rest: RestBinding, { token, input }: Run<RestName>): Promise<unknown> {
  const params = pathParams(rest.path);
  const fields = { ...(input as Record<string, unknown> | undefined) };
  // An economy write's key is a header, not a body field.
  const idempotencyKey = rest.idempotencyKey ? fields.idempotency_key : undefined;
  if (rest.idempotencyKey) delete fields.idempotency_key;
  let url = rest.path;
  for (const name of params) {
    url = url.replace(`:${name}`, encodeURIComponent(String(fields[name])));
    delete fields[name];
  }
  // A GET carries its fields in the query string; other methods in the JSON body.
  const query = rest.method === 'GET' ? (fields as Record<string, string>) : undefined;
  const body =
    query !== undefined
      ? undefined
      : params.length === 0
        ? rest.idempotencyKey
          ? fields
          : input
        : Object.keys(fields).length > 0
          ? fields
          : undefined;
  const response = await app.http.inject({
    method: rest.method,
    url,
    headers: {
      ...(token ? bearer(token) : {}),
      ...(typeof idempotencyKey === 'string' ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(query === undefined ? {} : { query }),
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
  });
  expect(response.statusCode, response.body).toBe(rest.status ?? 200);
  return rest.status === 204 ? null : response.json();
}

let app: TestApp;
const gameServerLaunches = recordingCommand();

describe('REST and AtriumClient answer every operation with a REST twin the same', () => {
  let accounts: Accounts;
  let socketClient: AtriumClient;
  const socketFetches: string[] = [];

  beforeAll(async () => {
    // One user does everything here, more often than the per-user rates allow.
    app = await buildTestApp({
      GAMESERVER_COMMAND: gameServerLaunches.command,
      CREATE_RATE_LIMIT_COUNT: 100_000,
      SOCIAL_RATE_LIMIT_COUNT: 100_000,
      // World, room, group and party chat sends share one counter per sender.
      DM_RATE_LIMIT_COUNT: 100_000,
      MAX_GROUPS_PER_USER: 10_000,
      GROUP_MAX_MEMBERSHIPS_PER_USER: 10_000,
      GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100_000,
      GAMESERVER_MAX_LIVE_PER_USER: 10_000,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    });
    accounts = { me: await registerUser(app), other: await registerUser(app) };
    // Counts the REST requests of the socket client: a frame row must not make any.
    const fetch: FetchLike = (url, init) => {
      socketFetches.push(`${init.method} ${url}`);
      return globalThis.fetch(url, init);
    };
    socketClient = new AtriumClient({
      httpUrl: app.httpUrl,
      wsUrl: app.wsUrl,
      WebSocket,
      fetch,
      accessToken: accounts.me.access_token,
    });
    await socketClient.ready();
  });

  afterAll(async () => {
    socketClient?.close();
    await app?.close();
  });

  it('has a row for every operation with a REST twin', () => {
    const withRest = Object.values(operations as Record<string, Operation>)
      .filter((op) => op.rest)
      .map((op) => op.name);
    expect(Object.keys(rows).sort()).toEqual(withRest.sort());
  });

  const cases = (Object.keys(rows) as RestName[]).map((name) => {
    const op: Operation = operations[name];
    return [name, op.frame ? 'socket' : 'REST'] as const;
  });

  it.each(cases)('%s gives the same answer over REST and over the client (its %s path)', async (name) => {
    const op: Operation = operations[name];
    const rest = op.rest as RestBinding;
    const row = rows[name] as Row<RestName>;
    const viaRest = await overRest(rest, await row.prepare(accounts));

    const run = await row.prepare(accounts);
    const call = (client: AtriumClient) =>
      (client.call as (name: string, input: unknown) => Promise<unknown>)(name, run.input);
    let viaClient: unknown;
    if (op.frame) {
      expect(run.token, 'frame rows run as the socket client').toBe(accounts.me.access_token);
      const before = socketFetches.length;
      viaClient = await call(socketClient);
      expect(socketFetches.slice(before)).toEqual([]);
    } else {
      const requests: string[] = [];
      const restClient = new AtriumClient({
        httpUrl: app.httpUrl,
        accessToken: run.token ?? null,
        fetch: (url, init) => {
          requests.push(init.method);
          return globalThis.fetch(url, init);
        },
      });
      viaClient = await call(restClient);
      restClient.close();
      expect(requests).toEqual([rest.method]);
    }

    expect(op.response.safeParse(viaClient).success).toBe(true);
    expect(normalise(viaClient, row.fresh ?? false)).toEqual(normalise(viaRest, row.fresh ?? false));
  });
});
