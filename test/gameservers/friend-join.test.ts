import { describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { heartbeat } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { socialGraph } from '../social/graph.js';
import {
  expectProblem,
  gameServerCalls,
  launchesOf,
  manualCommand,
  reservationsOf,
  reservedServer,
  serversOfWorlds,
  silentCommand,
} from './gameservers.js';

/**
 * Joining a friend (docs/gameservers.md, "Joining a friend"): the caller goes to the server of the
 * friend's latest reservation while it is live and the friend online, checked in the contract's
 * order with nothing written on refusal. Servers hold two players.
 */
describe('joining a friend', () => {
  const { command } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_MAX_PLAYERS: 2,
    GAMESERVER_MAX_RUNNING: 16,
  });
  const { get, join, joinWith, joinFriend, invite, expectStatus } = gameServerCalls(app);
  const { befriend, users } = socialGraph(app);
  const online = async (user: TokenResponse) =>
    expect((await heartbeat(app(), user.access_token)).statusCode).toBe(200);
  const world = async (owner: TokenResponse, visibility: 'public' | 'private' = 'public') =>
    (await createWorld(app(), owner.access_token, { visibility })).worldId;
  /** A place for the caller elsewhere: the reservation a refused join of a friend must leave alone. */
  const placedElsewhere = async (user: TokenResponse) => {
    const worldId = await world(user);
    return { worldId, serverId: (await join(user, worldId)).server_id };
  };

  it("puts the caller on the friend's server, moving their reservation there, counted at once; joining again keeps the place", async () => {
    const [caller, friend] = await users(2);
    await befriend(caller, friend);
    const worldId = await world(friend);
    const server = await join(friend, worldId);
    await online(friend);
    const left = await placedElsewhere(caller);
    const answer = await joinFriend(caller, friend.user.id);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toEqual({
      server_id: server.server_id,
      world_id: worldId,
      address: server.address,
    });
    expect(await reservationsOf(app().db, caller.user.id)).toEqual([server.server_id]);
    expect((await get(friend, server.server_id)).players).toBe(2);
    expect((await get(caller, left.serverId)).players).toBe(0);
    // The server is full now, but the caller holds a place on it.
    expect((await joinFriend(caller, friend.user.id)).statusCode).toBe(200);
    expect((await get(friend, server.server_id)).players).toBe(2);
  });

  it('refuses, in order and writing nothing: own id 422, unknown 404, not a friend (blocks included) or hidden 403, offline or on no live server 409 NOT_IN_WORLD', async () => {
    const [caller, stranger, blocked, hidden, offline, idle, ended, offlineHidden] = await users(8);
    for (const friend of [blocked, hidden, offline, idle, ended, offlineHidden])
      await befriend(caller, friend);
    const worldId = await world(caller);
    // Each of these is on a server of the world; only the offline ones never came online.
    for (const user of [stranger, blocked, hidden, offline, ended, offlineHidden]) await join(user, worldId);
    for (const user of [stranger, blocked, hidden, idle, ended]) await online(user);
    await expectStatus(204, 'PUT', `/api/blocks/${caller.user.id}`, blocked);
    for (const user of [hidden, offlineHidden])
      await expectStatus(200, 'PUT', '/api/profile/me', user, { privacy: { presence_visibility: 'nobody' } });
    const endedServer = (await reservationsOf(app().db, ended.user.id))[0] as string;
    await expectStatus(204, 'DELETE', `/api/servers/${endedServer}`, caller);
    const left = await placedElsewhere(caller);
    const serversBefore = await serversOfWorlds(app().db, [worldId, left.worldId]);

    const refusals: [string, number, string][] = [
      [caller.user.id, 422, 'VALIDATION_FAILED'],
      [caller.user.id.toUpperCase(), 422, 'VALIDATION_FAILED'],
      ['01a1ffb2-0000-7000-8000-000000000000', 404, 'NOT_FOUND'],
      ['nobody', 404, 'NOT_FOUND'],
      [stranger.user.id, 403, 'FORBIDDEN'],
      [blocked.user.id, 403, 'FORBIDDEN'],
      [hidden.user.id, 403, 'FORBIDDEN'],
      // Hidden comes before offline: the caller learns nothing of their presence.
      [offlineHidden.user.id, 403, 'FORBIDDEN'],
      [offline.user.id, 409, 'NOT_IN_WORLD'],
      [idle.user.id, 409, 'NOT_IN_WORLD'],
      [ended.user.id, 409, 'NOT_IN_WORLD'],
    ];
    for (const [userId, status, code] of refusals)
      expectProblem(await joinFriend(caller, userId), status, code);
    expect(await reservationsOf(app().db, caller.user.id)).toEqual([left.serverId]);
    expect(await serversOfWorlds(app().db, [worldId, left.worldId])).toEqual(serversBefore);
  });

  it("refuses 403 INSTANCE_RESTRICTED a friend's server in a world the caller may not read or whose access refuses them, before 409 SERVER_FULL for a full one", async () => {
    const [caller, friend, host, other] = await users(4);
    await befriend(caller, friend);
    await befriend(host, friend);
    await online(friend);
    const left = await placedElsewhere(caller);
    const refused = async (code: string, status = 403) => {
      expectProblem(await joinFriend(caller, friend.user.id), status, code);
      expect(await reservationsOf(app().db, caller.user.id)).toEqual([left.serverId]);
    };

    // The friend's private world.
    await join(friend, await world(friend, 'private'));
    await refused('INSTANCE_RESTRICTED');
    // The friends server of a host who is no friend of the caller's, full: access comes first.
    const hostWorld = await world(host);
    const hosted = (await joinWith(host, hostWorld, { access: 'friends' })).json().server_id as string;
    await joinWith(friend, hostWorld, { server_id: hosted });
    expect((await get(host, hosted)).players).toBe(2);
    await refused('INSTANCE_RESTRICTED');
    // The friend's own invite server: the caller is admitted once invited.
    const ownWorld = await world(friend);
    const inviteOnly = (await joinWith(friend, ownWorld, { access: 'invite' })).json().server_id as string;
    await refused('INSTANCE_RESTRICTED');
    expect((await invite(friend, inviteOnly, caller.user.id)).statusCode).toBe(201);
    expect((await joinFriend(caller, friend.user.id)).json()).toMatchObject({ server_id: inviteOnly });
    // The friend's own friends server admits the friend's friends, while it has room.
    const friendsOnly = (await joinWith(friend, ownWorld, { access: 'friends' })).json().server_id as string;
    await befriend(friend, other);
    await joinWith(other, ownWorld, { server_id: friendsOnly });
    const back = await placedElsewhere(caller);
    expectProblem(await joinFriend(caller, friend.user.id), 409, 'SERVER_FULL');
    expect(await reservationsOf(app().db, caller.user.id)).toEqual([back.serverId]);
  });

  it("admits exactly as many friends joining at once as the friend's server has room for, the others 409 SERVER_FULL", async () => {
    const [host, ...friends] = await users(5);
    for (const friend of friends) await befriend(host, friend);
    const server = await join(host, await world(host));
    await online(host);
    const answers = await Promise.all(friends.map((friend) => joinFriend(friend, host.user.id)));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409, 409, 409]);
    for (const refused of answers.filter((answer) => answer.statusCode === 409))
      expect(refused.json()).toMatchObject({ code: 'SERVER_FULL' });
    const placed = await Promise.all(friends.map((friend) => reservationsOf(app().db, friend.user.id)));
    expect(placed.flat()).toEqual([server.server_id]);
  });
});

/** A friend whose server is still starting, with servers that wait for the test's report. */
describe('joining a friend whose server is starting', () => {
  const { command, dir } = manualCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_READY_TIMEOUT_MS: 30_000 });
  const { get, join, joinFriend, internal } = gameServerCalls(app);
  const { befriend, users } = socialGraph(app);

  it('holds the place on it at once and answers once it is ready, as a join waits', async () => {
    const [caller, friend] = await users(2);
    await befriend(caller, friend);
    const { worldId } = await createWorld(app(), friend.access_token, { visibility: 'public' });
    const friendJoin = join(friend, worldId);
    expect((await heartbeat(app(), friend.access_token)).statusCode).toBe(200);
    const serverId = await reservedServer(app().db, friend.user.id);
    const callerJoin = joinFriend(caller, friend.user.id);
    await vi.waitFor(async () => expect(await reservationsOf(app().db, caller.user.id)).toEqual([serverId]), {
      timeout: 15_000,
      interval: 20,
    });
    expect(await get(friend, serverId)).toMatchObject({ status: 'starting', players: 2 });
    const launch = await vi.waitFor(
      () => {
        const [recorded] = launchesOf(dir, worldId);
        expect(recorded).toBeDefined();
        return recorded as Record<string, string>;
      },
      { timeout: 15_000, interval: 20 },
    );
    const address = `127.0.0.1:${launch.port}`;
    const ready = await internal(launch['server-token'] as string, '/internal/servers/self/status', {
      method: 'PUT',
      payload: { ready: true, address },
    });
    expect(ready.statusCode, ready.body).toBe(200);
    expect(await friendJoin).toMatchObject({ server_id: serverId, address });
    const answer = await callerJoin;
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toEqual({ server_id: serverId, world_id: worldId, address });
  });
});
