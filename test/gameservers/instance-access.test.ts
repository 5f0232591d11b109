import { describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { GameServer } from '../../protocol/gameservers.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { socialGraph } from '../social/graph.js';
import {
  expectProblem,
  gameServerCalls,
  launchesOf,
  manualCommand,
  reservationsOf,
  serversOfWorlds,
  silentCommand,
} from './gameservers.js';

/**
 * Instance access through joins of a world (docs/gameservers.md, "Instance access"), with the
 * local spawner: who may join a server of each access, which servers a join chooses, and what a
 * join naming a server is refused. Servers hold two players, so rooms fill quickly.
 */
describe('instance access on joins of a world', () => {
  const { command, dir } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_MAX_PLAYERS: 2,
    GAMESERVER_MAX_LIVE_PER_USER: 20,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
  });
  const { get, join, joinWith, invite, spawn, settled, expectStatus, call, stopServers } =
    gameServerCalls(app);
  const { befriend, users } = socialGraph(app);
  const joined = async (user: TokenResponse, worldId: string, body: object) => {
    const answer = await joinWith(user, worldId, body);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json() as { server_id: string; world_id: string; address: string };
  };
  const publicWorld = async (owner: TokenResponse) =>
    (await createWorld(app(), owner.access_token, { visibility: 'public' })).worldId;

  it("shows access and owner_id: a spawned server is public and its spawner's, a joined one carries the join's access and the joining user", async () => {
    const [owner, player] = await users(2);
    const admin = await registerWithRole(app(), 'admin');
    const worldId = await publicWorld(owner);
    const spawned = await settled(owner, (await spawn(owner, worldId)).server_id);
    expect(spawned).toMatchObject({ access: 'public', owner_id: owner.user.id });
    const own = await joined(player, worldId, { access: 'friends' });
    expect(own.server_id).not.toBe(spawned.server_id);
    expect(await get(player, own.server_id)).toMatchObject({ access: 'friends', owner_id: player.user.id });
    const listed = (await expectStatus(200, 'GET', `/api/admin/servers?world_id=${worldId}`, admin)).json()
      .items as GameServer[];
    expect(listed.map((server) => [server.server_id, server.access, server.owner_id]).sort()).toEqual(
      [
        [spawned.server_id, 'public', owner.user.id],
        [own.server_id, 'friends', player.user.id],
      ].sort(),
    );
    await stopServers(worldId);
  });

  it('refuses access with server_id, unknown keys, a bad access and a null body with 422, writing nothing; no body or {} is a plain join', async () => {
    const [owner, player] = await users(2);
    const worldId = await publicWorld(owner);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    for (const body of [
      { access: 'friends', server_id: server.server_id },
      { access: 'public', server_id: server.server_id },
      { unknown: true },
      { access: 'everyone' },
      { access: null },
      { server_id: 7 },
    ])
      expectProblem(await joinWith(player, worldId, body), 422, 'VALIDATION_FAILED');
    const nullBody = await app().http.inject({
      method: 'POST',
      url: `/api/worlds/${worldId}/join`,
      headers: { ...bearer(player.access_token), 'content-type': 'application/json' },
      payload: 'null',
    });
    expectProblem(nullBody, 422, 'VALIDATION_FAILED');
    expect(await reservationsOf(app().db, player.user.id)).toEqual([]);
    expect(await serversOfWorlds(app().db, [worldId])).toEqual([server.server_id]);

    expect((await join(player, worldId)).server_id).toBe(server.server_id);
    expect((await joined(player, worldId, {})).server_id).toBe(server.server_id);
    expect((await get(owner, server.server_id)).players).toBe(1);
    await stopServers(worldId);
  });

  it('chooses among public servers only without server_id: a plain join neither takes a friends server with room nor keeps a place there', async () => {
    const [owner, alice, bob] = await users(3);
    const worldId = await publicWorld(owner);
    const friendsOnly = await joined(alice, worldId, { access: 'friends' });
    const open = await join(bob, worldId);
    expect(open.server_id).not.toBe(friendsOnly.server_id);
    expect(await get(bob, open.server_id)).toMatchObject({ access: 'public', owner_id: bob.user.id });
    // Alice's place on her friends server does not keep her there: her plain join moves her.
    expect((await join(alice, worldId)).server_id).toBe(open.server_id);
    expect(await reservationsOf(app().db, alice.user.id)).toEqual([open.server_id]);
    expect((await get(alice, friendsOnly.server_id)).players).toBe(0);
    // Nor does a friends join take another owner's friends server.
    const bobs = await joined(bob, worldId, { access: 'friends' });
    expect(bobs.server_id).not.toBe(friendsOnly.server_id);
    expect(await get(bob, bobs.server_id)).toMatchObject({ access: 'friends', owner_id: bob.user.id });
    expect(launchesOf(dir, worldId)).toHaveLength(3);
    await stopServers(worldId);
  });

  it('takes the friends or invite server the caller owns while it has room, and starts another the caller owns when it has none', async () => {
    const [owner, alice, carol, dave] = await users(4);
    const worldId = await publicWorld(owner);
    const first = await joined(alice, worldId, { access: 'friends' });
    expect((await joined(alice, worldId, { access: 'friends' })).server_id).toBe(first.server_id);
    const invited = await joined(alice, worldId, { access: 'invite' });
    expect(invited.server_id).not.toBe(first.server_id);
    expect(await get(alice, invited.server_id)).toMatchObject({ access: 'invite', owner_id: alice.user.id });
    // Alice left her friends server for her invite one: two friends of hers fill it.
    await befriend(alice, carol);
    await befriend(alice, dave);
    for (const friend of [carol, dave])
      expect((await joined(friend, worldId, { server_id: first.server_id })).server_id).toBe(first.server_id);
    const second = await joined(alice, worldId, { access: 'friends' });
    expect(second.server_id).not.toBe(first.server_id);
    expect(await get(alice, second.server_id)).toMatchObject({ access: 'friends', owner_id: alice.user.id });
    expect(launchesOf(dir, worldId)).toHaveLength(3);
    await stopServers(worldId);
  });

  it('answers 404 NOT_FOUND to a join naming no live server of this world, and to a world the caller may not read whatever server it names', async () => {
    const [owner, player] = await users(2);
    const worldId = await publicWorld(owner);
    const otherWorld = await publicWorld(owner);
    const hidden = (await createWorld(app(), owner.access_token, { visibility: 'private' })).worldId;
    const ended = (await spawn(owner, worldId)).server_id;
    await expectStatus(204, 'DELETE', `/api/servers/${ended}`, owner);
    const elsewhere = await settled(owner, (await spawn(owner, otherWorld)).server_id);
    const hiddenServer = await settled(owner, (await spawn(owner, hidden)).server_id);
    // An invitation admits to a server, never to a world the invitee may not read.
    expect((await invite(owner, hiddenServer.server_id, player.user.id)).statusCode).toBe(201);
    const refusals = [
      [worldId, '01a1ffb2-0000-7000-8000-000000000000'],
      [worldId, 'not-a-server'],
      [worldId, elsewhere.server_id],
      [worldId, ended],
      [hidden, hiddenServer.server_id],
    ];
    for (const [world, serverId] of refusals)
      expectProblem(await joinWith(player, world as string, { server_id: serverId }), 404, 'NOT_FOUND');
    expect(await reservationsOf(app().db, player.user.id)).toEqual([]);
    expect(await serversOfWorlds(app().db, [worldId])).toEqual([ended]);
    await stopServers(otherWorld, hidden);
  });

  it('admits a public server whoever reads the world, a friends one its owner, friends and invitees, an invite one its owner and invitees; 403 INSTANCE_RESTRICTED otherwise, before room, writing nothing', async () => {
    const [owner, friend, invitee, stranger] = await users(4);
    const worldId = await publicWorld(owner);
    await befriend(owner, friend);
    const friendsOnly = (await joined(owner, worldId, { access: 'friends' })).server_id;
    const inviteOnly = (await joined(owner, worldId, { access: 'invite' })).server_id;
    for (const server of [friendsOnly, inviteOnly])
      expect((await invite(owner, server, invitee.user.id)).statusCode).toBe(201);
    const open = await settled(owner, (await spawn(owner, worldId)).server_id);
    expect((await joined(stranger, worldId, { server_id: open.server_id })).server_id).toBe(open.server_id);

    // The owner and an invitee fill the invite server; the friend and the invitee the friends one.
    expect((await joined(invitee, worldId, { server_id: inviteOnly })).server_id).toBe(inviteOnly);
    expect((await joined(friend, worldId, { server_id: friendsOnly })).server_id).toBe(friendsOnly);
    expect((await joined(invitee, worldId, { server_id: friendsOnly })).server_id).toBe(friendsOnly);
    expect((await joined(owner, worldId, { server_id: inviteOnly })).server_id).toBe(inviteOnly);

    // Refused by access, whether or not there is room: the friends server is full now.
    const refusals: [TokenResponse, string][] = [
      [stranger, friendsOnly],
      [stranger, inviteOnly],
      [friend, inviteOnly],
    ];
    for (const [user, server] of refusals)
      expectProblem(await joinWith(user, worldId, { server_id: server }), 403, 'INSTANCE_RESTRICTED');
    expect(await reservationsOf(app().db, stranger.user.id)).toEqual([open.server_id]);
    expect(await reservationsOf(app().db, friend.user.id)).toEqual([friendsOnly]);
    expect((await get(owner, inviteOnly)).players).toBe(1);
    await stopServers(worldId);
  });

  it('refuses invitees and friends blocked either way with the owner on friends and invite servers, never on a public one', async () => {
    const [owner, blocker, blocked, friend] = await users(4);
    const worldId = await publicWorld(owner);
    await befriend(owner, friend);
    const friendsOnly = (await joined(owner, worldId, { access: 'friends' })).server_id;
    const inviteOnly = (await joined(owner, worldId, { access: 'invite' })).server_id;
    const open = await settled(owner, (await spawn(owner, worldId)).server_id);
    for (const server of [friendsOnly, inviteOnly])
      for (const user of [blocker, blocked, friend])
        expect((await invite(owner, server, user.user.id)).statusCode).toBe(201);
    await expectStatus(204, 'PUT', `/api/blocks/${owner.user.id}`, blocker);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, owner);
    // A block ends the friendship too: the friend blocked now is neither friend nor admitted.
    await expectStatus(204, 'PUT', `/api/blocks/${friend.user.id}`, owner);
    for (const user of [blocker, blocked, friend])
      for (const server of [friendsOnly, inviteOnly])
        expectProblem(await joinWith(user, worldId, { server_id: server }), 403, 'INSTANCE_RESTRICTED');
    for (const user of [blocker, blocked]) expect(await reservationsOf(app().db, user.user.id)).toEqual([]);
    expect((await joined(blocker, worldId, { server_id: open.server_id })).server_id).toBe(open.server_id);
    await stopServers(worldId);
  });

  it('refuses a named server at GAMESERVER_MAX_PLAYERS with 409 SERVER_FULL, writing nothing, unless the caller holds a place on it', async () => {
    const [owner, first, second, late] = await users(4);
    const worldId = await publicWorld(owner);
    const open = await settled(owner, (await spawn(owner, worldId)).server_id);
    const otherWorld = await publicWorld(owner);
    const elsewhere = await join(late, otherWorld);
    for (const user of [first, second]) await joined(user, worldId, { server_id: open.server_id });
    expectProblem(await joinWith(late, worldId, { server_id: open.server_id }), 409, 'SERVER_FULL');
    expect(await reservationsOf(app().db, late.user.id)).toEqual([elsewhere.server_id]);
    expect((await get(owner, open.server_id)).players).toBe(2);
    expect((await joined(first, worldId, { server_id: open.server_id })).server_id).toBe(open.server_id);
    expect((await get(owner, open.server_id)).players).toBe(2);
    await stopServers(worldId, otherWorld);
  });

  it('admits exactly as many concurrent joins naming a server as it has room for, the others 409 SERVER_FULL', async () => {
    const owner = await registerUser(app());
    const worldId = await publicWorld(owner);
    const own = (await joined(owner, worldId, { access: 'invite' })).server_id;
    const guests = await users(6);
    for (const guest of guests) expect((await invite(owner, own, guest.user.id)).statusCode).toBe(201);
    const answers = await Promise.all(guests.map((guest) => joinWith(guest, worldId, { server_id: own })));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const refused of answers.filter((answer) => answer.statusCode === 409))
      expect(refused.json()).toMatchObject({ code: 'SERVER_FULL' });
    const placed = await Promise.all(guests.map((guest) => reservationsOf(app().db, guest.user.id)));
    expect(placed.flat()).toEqual([own]);
    expect((await get(owner, own)).players).toBe(2);
    await stopServers(worldId);
  });

  it("starts one server for an owner's concurrent friends joins, and a stranger's concurrent plain joins never land on it", async () => {
    const [owner, stranger] = await users(2);
    const worldId = await publicWorld(owner);
    const [owned, open] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => joined(owner, worldId, { access: 'friends' }))),
      Promise.all(Array.from({ length: 5 }, () => join(stranger, worldId))),
    ]);
    expect(new Set(owned.map((answer) => answer.server_id)).size).toBe(1);
    expect(new Set(open.map((answer) => answer.server_id)).size).toBe(1);
    expect(owned[0]?.server_id).not.toBe(open[0]?.server_id);
    expect(launchesOf(dir, worldId)).toHaveLength(2);
    const ownedServer = await get(owner, owned[0]?.server_id as string);
    expect(ownedServer).toMatchObject({ access: 'friends', owner_id: owner.user.id, players: 1 });
    await stopServers(worldId);
  });

  it('answers 404 NOT_FOUND to a join of an unknown world whatever its body asks, writing nothing', async () => {
    const player = await registerUser(app());
    expectProblem(
      await call('POST', '/api/worlds/not-a-world/join', player, { access: 'invite' }),
      404,
      'NOT_FOUND',
    );
    expect(await reservationsOf(app().db, player.user.id)).toEqual([]);
  });
});

/**
 * Joins and starting servers, with servers that report nothing until the test reports for them:
 * the waiting is observed without a race against the server's own report. Servers hold three.
 */
describe('joins and starting servers', () => {
  const { command, dir } = manualCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_READY_TIMEOUT_MS: 30_000,
    GAMESERVER_MAX_PLAYERS: 3,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
  });
  const { get, joinWith, internal, spawn, readyAll: readyIn } = gameServerCalls(app);
  const { befriend, users } = socialGraph(app);
  const readyAll = (worldId: string) => readyIn(dir, worldId);
  /** Waits until the user's reservation is on a server other than `not`, and answers it. */
  const placedElsewhere = (user: TokenResponse, not: readonly string[]) =>
    vi.waitFor(
      async () => {
        const [serverId] = await reservationsOf(app().db, user.user.id);
        expect(serverId).toBeDefined();
        expect(not).not.toContain(serverId);
        return serverId as string;
      },
      { timeout: 15_000, interval: 20 },
    );

  it('takes the fullest friends server the caller owns with room, a starting one over a ready one with fewer players', async () => {
    const [owner, a, b, c, d, e] = await users(6);
    for (const friend of [a, b, c, d, e]) await befriend(owner, friend);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const open = (await spawn(owner, worldId)).server_id;
    await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(1), { timeout: 15_000 });
    await readyAll(worldId);
    const named = async (user: TokenResponse, serverId: string) =>
      expect((await joinWith(user, worldId, { server_id: serverId })).statusCode).toBe(200);

    // A ready friends server of the owner's, A and B on it; the owner goes to the public one.
    const firstJoin = joinWith(owner, worldId, { access: 'friends' });
    const first = await placedElsewhere(owner, []);
    await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(2), { timeout: 15_000 });
    await readyAll(worldId);
    expect((await firstJoin).json()).toMatchObject({ server_id: first });
    for (const friend of [a, b]) await named(friend, first);
    await named(owner, open);
    // C fills it: the owner's next friends join starts a second one, D and E hold places there.
    await named(c, first);
    const secondJoin = joinWith(owner, worldId, { access: 'friends' });
    const second = await placedElsewhere(owner, [open, first]);
    const waiting = [d, e].map((friend) => joinWith(friend, worldId, { server_id: second }));
    for (const friend of [d, e]) await placedElsewhere(friend, []);
    await named(owner, open);
    for (const friend of [b, c]) await named(friend, open);
    expect(await get(owner, first)).toMatchObject({ status: 'ready', players: 1 });
    expect(await get(owner, second)).toMatchObject({ status: 'starting', players: 2 });

    // The starting one is the fuller: the owner's friends join takes it, and waits for it.
    const thirdJoin = joinWith(owner, worldId, { access: 'friends' });
    expect(await placedElsewhere(owner, [open, first])).toBe(second);
    // Its process records its launch as it starts: under load, a moment after the record.
    await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(3), { timeout: 15_000 });
    await readyAll(worldId);
    for (const answer of await Promise.all([secondJoin, thirdJoin, ...waiting]))
      expect(answer.json()).toMatchObject({ server_id: second });
  });

  it('holds the place at once and answers once the server is ready; a starting server its access refuses is refused at once', async () => {
    const [owner, friend, stranger] = await users(3);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    await befriend(owner, friend);
    const ownerJoin = joinWith(owner, worldId, { access: 'friends' });
    const [serverId] = await vi.waitFor(
      async () => {
        const ids = await serversOfWorlds(app().db, [worldId]);
        expect(ids).toHaveLength(1);
        return ids;
      },
      { timeout: 15_000, interval: 20 },
    );
    expectProblem(await joinWith(stranger, worldId, { server_id: serverId }), 403, 'INSTANCE_RESTRICTED');
    const friendJoin = joinWith(friend, worldId, { server_id: serverId });
    // Both places count while it starts.
    await vi.waitFor(async () => expect((await get(owner, serverId as string)).players).toBe(2), {
      timeout: 15_000,
      interval: 20,
    });
    expect(await get(owner, serverId as string)).toMatchObject({ status: 'starting' });
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
      payload: { ready: true, address, players: 0 },
    });
    expect(ready.statusCode, ready.body).toBe(200);
    for (const answer of await Promise.all([ownerJoin, friendJoin])) {
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toEqual({ server_id: serverId, world_id: worldId, address });
    }
    // The report that made it ready counted nobody: the two places made while it started still count.
    expect((await get(owner, serverId as string)).players).toBe(2);
    expect(await reservationsOf(app().db, stranger.user.id)).toEqual([]);
  });
});
