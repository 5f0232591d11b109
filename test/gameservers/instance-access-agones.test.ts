import { describe, expect, it, vi } from 'vitest';
import { heartbeat } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { socialGraph } from '../social/graph.js';
import type { FakeGameServer } from './fake-kubernetes.js';
import { expectProblem, gameServerCalls, reservationsOf, reservedServer } from './gameservers.js';
import { useFakeKubernetes } from './kubeconfig.js';

/**
 * Instance access with GAMESERVER_SPAWNER=agones (the fake Kubernetes API found through
 * KUBECONFIG, as agones-app.test.ts does): the same rules whatever runs the servers.
 */
const { kubernetes, gameServerOf } = useFakeKubernetes();

describe('instance access on Agones', () => {
  const app = useTestApp({
    GAMESERVER_SPAWNER: 'agones',
    GAMESERVER_AGONES_POLL_MS: 20,
    GAMESERVER_READY_TIMEOUT_MS: 20_000,
    GAMESERVER_MAX_PLAYERS: 2,
  });
  const { get, join, joinWith, joinFriend, invite } = gameServerCalls(app);
  const { befriend, users } = socialGraph(app);

  it('admits by access through every join path: a named server, a friend joined, an invitation; a plain join starts a public GameServer of its own', async () => {
    kubernetes().autoReady(50);
    const [owner, friend, invitee, stranger] = await users(4);
    await befriend(owner, friend);
    await befriend(friend, stranger);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const own = await joinWith(owner, worldId, { access: 'friends' });
    expect(own.statusCode, own.body).toBe(200);
    const serverId = own.json().server_id as string;
    expect(await get(owner, serverId)).toMatchObject({
      backend: 'agones',
      access: 'friends',
      owner_id: owner.user.id,
      status: 'ready',
    });
    expect(gameServerOf(serverId)).toBeDefined();

    expectProblem(await joinWith(stranger, worldId, { server_id: serverId }), 403, 'INSTANCE_RESTRICTED');
    expect((await joinWith(friend, worldId, { server_id: serverId })).statusCode).toBe(200);
    // The stranger is the friend's friend, not the owner's: joining the friend is refused too.
    expect((await heartbeat(app(), friend.access_token)).statusCode).toBe(200);
    expectProblem(await joinFriend(stranger, friend.user.id), 403, 'INSTANCE_RESTRICTED');
    expect(await reservationsOf(app().db, stranger.user.id)).toEqual([]);
    // Full now (the owner and the friend): an invitee gets in once the friend has left.
    expect((await invite(owner, serverId, invitee.user.id)).statusCode).toBe(201);
    expectProblem(await joinWith(invitee, worldId, { server_id: serverId }), 409, 'SERVER_FULL');
    await join(friend, (await createWorld(app(), friend.access_token, { visibility: 'public' })).worldId);
    expect((await joinWith(invitee, worldId, { server_id: serverId })).statusCode).toBe(200);

    const open = await join(stranger, worldId);
    expect(open.server_id).not.toBe(serverId);
    expect(await get(stranger, open.server_id)).toMatchObject({ backend: 'agones', access: 'public' });
  });

  it('holds places on a starting GameServer at once, refuses the one past its room, and answers the waiting joins once Agones says Ready', async () => {
    kubernetes().autoReady(undefined);
    const [owner, invitee, late] = await users(3);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const ownerJoin = joinWith(owner, worldId, { access: 'invite' });
    const serverId = await reservedServer(app().db, owner.user.id);
    for (const user of [invitee, late])
      expect((await invite(owner, serverId, user.user.id)).statusCode).toBe(201);
    const inviteeJoin = joinWith(invitee, worldId, { server_id: serverId });
    await vi.waitFor(async () => expect((await get(owner, serverId)).players).toBe(2), {
      timeout: 15_000,
      interval: 20,
    });
    expectProblem(await joinWith(late, worldId, { server_id: serverId }), 409, 'SERVER_FULL');
    const gameServer = await vi.waitFor(
      () => {
        const found = gameServerOf(serverId);
        expect(found).toBeDefined();
        return found as FakeGameServer;
      },
      { timeout: 15_000, interval: 20 },
    );
    expect(await get(owner, serverId)).toMatchObject({ status: 'starting' });
    kubernetes().setState(gameServer.metadata.name, 'Ready', { address: '10.0.0.7', port: 7777 });
    for (const answer of await Promise.all([ownerJoin, inviteeJoin])) {
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toEqual({ server_id: serverId, world_id: worldId, address: '10.0.0.7:7777' });
    }
    expect(await reservationsOf(app().db, late.user.id)).toEqual([]);
  });
});
