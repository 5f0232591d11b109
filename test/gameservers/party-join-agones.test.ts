import { afterEach, describe, expect, it, vi } from 'vitest';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets } from '../helpers/ws-client.js';
import { partyCalls } from '../parties/parties.js';
import type { FakeGameServer } from './fake-kubernetes.js';
import { expectProblem, gameServerCalls, reservationsOf, reservedServer } from './gameservers.js';
import { useFakeKubernetes } from './kubeconfig.js';

/**
 * A party joining together with GAMESERVER_SPAWNER=agones (the fake Kubernetes API found through
 * KUBECONFIG, as instance-access-agones.test.ts does): the same placement whatever runs the servers.
 */
const { kubernetes, gameServerOf } = useFakeKubernetes();

describe('a party joining together on Agones', () => {
  const app = useTestApp({
    GAMESERVER_SPAWNER: 'agones',
    GAMESERVER_AGONES_POLL_MS: 20,
    GAMESERVER_READY_TIMEOUT_MS: 20_000,
    GAMESERVER_MAX_PLAYERS: 3,
  });
  const { get, joinWith, partyJoin } = gameServerCalls(app);
  const { users, partyOf } = partyCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  it("places the party on the leader's starting friends GameServer at once, answers once Agones says Ready, and the members follow", async () => {
    kubernetes().autoReady(undefined);
    const [owner, leader, a, b] = await users(4);
    const party = await partyOf(leader, [a, b]);
    const memberSockets = [await sockets.open(a.access_token), await sockets.open(b.access_token)];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const pending = partyJoin(leader, worldId, { access: 'friends' });
    const serverId = await reservedServer(app().db, a.user.id);
    for (const user of [leader, b]) expect(await reservationsOf(app().db, user.user.id)).toEqual([serverId]);
    expect(await get(leader, serverId)).toMatchObject({
      backend: 'agones',
      status: 'starting',
      access: 'friends',
      owner_id: leader.user.id,
      players: 3,
    });
    const gameServer = await vi.waitFor(
      () => {
        const found = gameServerOf(serverId);
        expect(found).toBeDefined();
        return found as FakeGameServer;
      },
      { timeout: 15_000, interval: 20 },
    );
    kubernetes().setState(gameServer.metadata.name, 'Ready', { address: '10.0.0.8', port: 7777 });
    const answer = await pending;
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toEqual({
      server_id: serverId,
      world_id: worldId,
      address: '10.0.0.8:7777',
      party_placement: { server_id: serverId, user_ids: [leader, a, b].map((u) => u.user.id) },
    });
    for (const socket of memberSockets)
      expect((await socket.next((frame) => frame.t === 'party.follow')).d).toEqual({
        party_id: party.id,
        world_id: worldId,
        server_id: serverId,
      });
    // Invited by the placement, the members are admitted; the server is full with them.
    const followed = await joinWith(a, worldId, { server_id: serverId });
    expect(followed.json()).toEqual({ server_id: serverId, world_id: worldId, address: '10.0.0.8:7777' });
    expect((await get(leader, serverId)).players).toBe(3);
  });

  it('takes a Ready GameServer with room for all, and refuses one named without room with 409 NO_ROOM_FOR_PARTY', async () => {
    kubernetes().autoReady(50);
    const [owner, stranger, leader, member] = await users(4);
    await partyOf(leader, [member]);
    await sockets.open(member.access_token);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const open = await joinWith(stranger, worldId, {});
    expect(open.statusCode, open.body).toBe(200);
    const serverId = open.json().server_id as string;
    const placed = await partyJoin(leader, worldId);
    expect(placed.statusCode, placed.body).toBe(200);
    expect(placed.json()).toMatchObject({ server_id: serverId, party_placement: { server_id: serverId } });
    expect((await get(stranger, serverId)).players).toBe(3);

    const [otherLeader, otherMember] = await users(2);
    await partyOf(otherLeader, [otherMember]);
    await sockets.open(otherMember.access_token);
    expectProblem(await partyJoin(otherLeader, worldId, { server_id: serverId }), 409, 'NO_ROOM_FOR_PARTY');
    expect(await reservationsOf(app().db, otherMember.user.id)).toEqual([]);
  });
});
