import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { AtriumClient } from '../../protocol/client.js';
import type { PartyFollowEvent } from '../../protocol/gameservers.js';
import { heartbeat } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, type ReceivedFrame, request } from '../helpers/ws-client.js';
import { partyCalls } from '../parties/parties.js';
import {
  expectProblem,
  gameServerCalls,
  launchesOf,
  manualCommand,
  reservationsOf,
  serversOfWorlds,
  silentCommand,
} from './gameservers.js';

type Position = { offset: number; epoch: string };
type PartyAnswer = {
  server_id: string;
  world_id: string;
  address: string;
  party_placement?: { server_id: string; user_ids: string[] };
};

const follows = (frame: ReceivedFrame) => frame.t === 'party.follow';
/** A join's answer, which must be 200. */
const answered = (response: LightMyRequestResponse): PartyAnswer => {
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as PartyAnswer;
};

/**
 * A party joining a world together (docs/gameservers.md, "Joining together") on servers that are
 * ready at once: which server the placement picks, whom it places, what it refuses in the
 * contract's order with nothing written, and the members' `party.follow`. Servers hold four.
 */
describe('a party joining a world together', () => {
  const { command, dir } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_MAX_PLAYERS: 4,
    GAMESERVER_MAX_LIVE_PER_USER: 3,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
    GAMESERVER_MAX_RUNNING: 24,
  });
  const { get, join, joinWith, partyJoin, spawn, settled, expectStatus, stopServers } = gameServerCalls(app);
  const { users, partyOf } = partyCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  /** The members come online (the presence store) without a socket. */
  const online = async (...members: TokenResponse[]) => {
    for (const member of members) expect((await heartbeat(app(), member.access_token)).statusCode).toBe(200);
  };
  const publicWorld = async (owner: TokenResponse) =>
    (await createWorld(app(), owner.access_token, { visibility: 'public' })).worldId;
  /** A ready public server of the world, started by its owner, with `taken` places held by new users. */
  const serverWith = async (owner: TokenResponse, worldId: string, taken: number) => {
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    for (const filler of await users(taken))
      answered(await joinWith(filler, worldId, { server_id: server.server_id }));
    return server;
  };
  const reservationRows = (userIds: string[]) =>
    queryRows(
      app().db,
      `select user_id, server_id, created_at, expires_at from game_server_reservations
       where user_id = any(?::uuid[]) order by user_id`,
      [`{${userIds.join(',')}}`],
    );
  const invitationsOf = (serverId: string) =>
    queryRows<{ user_id: string; invited_by: string }>(
      app().db,
      'select user_id, invited_by from game_server_invitations where server_id = ? order by user_id',
      [serverId],
    );

  it('places the leader and every member online now, whatever their presence_visibility, on one new server; an offline member is not placed', async () => {
    const [owner, leader, seen, hidden, offline] = await users(5);
    await partyOf(leader, [seen, hidden, offline]);
    await expectStatus(200, 'PUT', '/api/profile/me', hidden, { privacy: { presence_visibility: 'nobody' } });
    await online(seen, hidden);
    const worldId = await publicWorld(owner);
    const answer = answered(await partyJoin(leader, worldId));
    expect(answer).toEqual({
      server_id: answer.server_id,
      world_id: worldId,
      address: expect.stringMatching(/:\d+$/),
      party_placement: {
        server_id: answer.server_id,
        user_ids: [leader, seen, hidden].map((u) => u.user.id),
      },
    });
    for (const member of [leader, seen, hidden])
      expect(await reservationsOf(app().db, member.user.id)).toEqual([answer.server_id]);
    expect(await reservationsOf(app().db, offline.user.id)).toEqual([]);
    expect(await get(leader, answer.server_id)).toMatchObject({
      status: 'ready',
      players: 3,
      access: 'public',
      owner_id: leader.user.id,
    });
    expect(launchesOf(dir, worldId)).toHaveLength(1);
    await stopServers(worldId);
  });

  it('is a plain join with party false or absent: the leader alone, no party_placement', async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    await online(member);
    const worldId = await publicWorld(owner);
    const plain = answered(await joinWith(leader, worldId, { party: false }));
    expect(plain).toEqual({ server_id: plain.server_id, world_id: worldId, address: plain.address });
    expect(answered(await joinWith(leader, worldId, {}))).toEqual(plain);
    expect(await reservationsOf(app().db, member.user.id)).toEqual([]);
    await stopServers(worldId);
  });

  it('picks the fullest server with room for every placed member, skips a fuller one without, and starts one when none fits', async () => {
    const owner = (await users(1))[0];
    const worldId = await publicWorld(owner);
    const fullest = await serverWith(owner, worldId, 3);
    const fuller = await serverWith(owner, worldId, 2);
    const emptier = await serverWith(owner, worldId, 1);
    const [pairLeader, pairMember, trioLeader, trioA, trioB, lateLeader, lateMember] = await users(7);
    await partyOf(pairLeader, [pairMember]);
    await partyOf(trioLeader, [trioA, trioB]);
    await partyOf(lateLeader, [lateMember]);
    await online(pairMember, trioA, trioB, lateMember);

    // Two need places: 3 + 2 is past four, 2 + 2 is not.
    expect(answered(await partyJoin(pairLeader, worldId)).server_id).toBe(fuller.server_id);
    // Three need places: only the server holding one has room for them.
    expect(answered(await partyJoin(trioLeader, worldId)).server_id).toBe(emptier.server_id);
    const started = answered(await partyJoin(lateLeader, worldId));
    expect([fullest, fuller, emptier].map((server) => server.server_id)).not.toContain(started.server_id);
    expect(await get(lateLeader, started.server_id)).toMatchObject({
      owner_id: lateLeader.user.id,
      players: 2,
    });
    for (const server of [fullest, fuller, emptier])
      expect((await get(owner, server.server_id)).players).toBe(server === fullest ? 3 : 4);
    expect(launchesOf(dir, worldId)).toHaveLength(4);
    await stopServers(worldId);
  });

  it('moves members holding places elsewhere, keeps the place of one already on the chosen server, and counts each once', async () => {
    const [owner, leader, onServer, elsewhere, stranger] = await users(5);
    await partyOf(leader, [onServer, elsewhere]);
    await online(onServer, elsewhere);
    const worldId = await publicWorld(owner);
    await serverWith(owner, worldId, 3);
    const chosen = await serverWith(owner, worldId, 0);
    for (const user of [onServer, stranger])
      answered(await joinWith(user, worldId, { server_id: chosen.server_id }));
    const otherWorld = await publicWorld(elsewhere);
    const left = await join(elsewhere, otherWorld);
    const [kept] = await reservationRows([onServer.user.id]);

    // The server with three has no room for three; the chosen one holds one of them already.
    expect(answered(await partyJoin(leader, worldId)).server_id).toBe(chosen.server_id);
    expect((await get(owner, chosen.server_id)).players).toBe(4);
    expect((await get(elsewhere, left.server_id)).players).toBe(0);
    for (const user of [leader, onServer, elsewhere])
      expect(await reservationsOf(app().db, user.user.id)).toEqual([chosen.server_id]);
    expect((await reservationRows([onServer.user.id]))[0]?.created_at).toEqual(kept?.created_at);
    await stopServers(worldId, otherWorld);
  });

  it("tells every other placed member with party.follow on their own recorded topic; a member's join naming the server reuses the place and answers its address", async () => {
    const [owner, leader, a, b, c] = await users(5);
    const cSocket = await sockets.open(c.access_token);
    const party = await partyOf(leader, [a, b, c]);
    const leaderSocket = await sockets.open(leader.access_token);
    const aSocket = await sockets.open(a.access_token);
    const bSocket = await sockets.open(b.access_token);
    // C's last event before the placement (its join of the party): a recovery from there replays it.
    const last = (await cSocket.next((frame) => frame.t === 'party.updated')).pos as Position;
    const worldId = await publicWorld(owner);
    const answer = answered(await partyJoin(leader, worldId));
    expect(answer.party_placement?.user_ids).toEqual([leader, a, b, c].map((u) => u.user.id));
    for (const socket of [aSocket, bSocket, cSocket]) {
      const heard = await socket.next(follows);
      expect(heard.d).toEqual({ party_id: party.id, world_id: worldId, server_id: answer.server_id });
      expect(heard.pos).toMatchObject({ offset: expect.any(Number), epoch: expect.any(String) });
    }
    const again = await sockets.open();
    const ack = await request(again, 'auth', { token: c.access_token, recover: last });
    expect(ack).toMatchObject({ t: 'ack', d: { recovered: true } });
    expect(again.frames.filter(follows).map((frame) => frame.d)).toEqual([
      { party_id: party.id, world_id: worldId, server_id: answer.server_id },
    ]);

    // The server is full with the party: each member's join reuses their place.
    expect((await get(leader, answer.server_id)).players).toBe(4);
    for (const member of [a, b, c]) {
      const followed = answered(await joinWith(member, worldId, { server_id: answer.server_id }));
      expect(followed).toEqual({ server_id: answer.server_id, world_id: worldId, address: answer.address });
    }
    expect((await get(leader, answer.server_id)).players).toBe(4);
    expect(leaderSocket.frames.filter(follows)).toEqual([]);
    await stopServers(worldId);
  });

  it('refuses, in order and writing nothing: in no party 409 NOT_IN_PARTY, not its leader 403 FORBIDDEN, more members online than a server holds 409 NO_ROOM_FOR_PARTY, a bad body 422', async () => {
    const [owner, loner, leader, member, crowdLeader, ...crowd] = await users(9);
    await partyOf(leader, [member]);
    await partyOf(crowdLeader, crowd);
    const memberSocket = await sockets.open(member.access_token);
    await online(...crowd);
    const worldId = await publicWorld(owner);
    const server = await serverWith(owner, worldId, 4);
    // Places held elsewhere, which no refusal may move.
    const elsewhere = await publicWorld(owner);
    for (const user of [loner, leader, member, crowdLeader]) await join(user, elsewhere);
    const before = await reservationRows(
      [loner, leader, member, crowdLeader, ...crowd].map((u) => u.user.id),
    );
    const refusals: [TokenResponse, object, number, string][] = [
      [loner, {}, 409, 'NOT_IN_PARTY'],
      [loner, { server_id: server.server_id }, 409, 'NOT_IN_PARTY'],
      [loner, { server_id: 'not-a-server' }, 409, 'NOT_IN_PARTY'],
      [member, {}, 403, 'FORBIDDEN'],
      [crowd[0] as TokenResponse, {}, 403, 'FORBIDDEN'],
      [crowdLeader, {}, 409, 'NO_ROOM_FOR_PARTY'],
      [crowdLeader, { access: 'invite' }, 409, 'NO_ROOM_FOR_PARTY'],
      [crowdLeader, { server_id: server.server_id }, 409, 'NO_ROOM_FOR_PARTY'],
      [leader, { party: 'yes' }, 422, 'VALIDATION_FAILED'],
      [leader, { party: null }, 422, 'VALIDATION_FAILED'],
      [leader, { access: 'friends', server_id: server.server_id }, 422, 'VALIDATION_FAILED'],
    ];
    for (const [user, body, status, code] of refusals)
      expectProblem(await partyJoin(user, worldId, body), status, code);
    expect(
      await reservationRows([loner, leader, member, crowdLeader, ...crowd].map((u) => u.user.id)),
    ).toEqual(before);
    expect(await serversOfWorlds(app().db, [worldId])).toEqual([server.server_id]);
    // The placement that follows is the only one the member hears of.
    const placed = answered(await partyJoin(leader, worldId));
    expect((await memberSocket.next(follows)).d).toMatchObject({ server_id: placed.server_id });
    expect(memberSocket.frames.filter(follows)).toEqual([]);
    await stopServers(worldId, elsewhere);
  });

  it('names a server: 404 when it is no live server of the world, 409 NO_ROOM_FOR_PARTY without room for all (before its access), 403 INSTANCE_RESTRICTED when its access refuses a placed member, writing nothing', async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    await online(member);
    const worldId = await publicWorld(owner);
    const crowded = await serverWith(owner, worldId, 3);
    // The owner's friends server, on which the leader is invited and the member is not.
    const friendsOnly = answered(await joinWith(owner, worldId, { access: 'friends' })).server_id;
    await expectStatus(201, 'POST', `/api/servers/${friendsOnly}/invites`, owner, {
      user_id: leader.user.id,
    });
    // The owner's invite server, with three invitees on it besides the owner: full, and refusing both.
    const crowdedInvite = answered(await joinWith(owner, worldId, { access: 'invite' })).server_id;
    for (const filler of await users(3)) {
      await expectStatus(201, 'POST', `/api/servers/${crowdedInvite}/invites`, owner, {
        user_id: filler.user.id,
      });
      answered(await joinWith(filler, worldId, { server_id: crowdedInvite }));
    }
    const otherOwner = (await users(1))[0];
    const otherWorld = await publicWorld(otherOwner);
    const elsewhere = await serverWith(otherOwner, otherWorld, 0);
    const before = await reservationRows([leader.user.id, member.user.id]);
    const refusals: [object, number, string][] = [
      [{ server_id: '01a1ffb2-0000-7000-8000-000000000000' }, 404, 'NOT_FOUND'],
      [{ server_id: 'not-a-server' }, 404, 'NOT_FOUND'],
      [{ server_id: elsewhere.server_id }, 404, 'NOT_FOUND'],
      [{ server_id: crowded.server_id }, 409, 'NO_ROOM_FOR_PARTY'],
      [{ server_id: crowdedInvite }, 409, 'NO_ROOM_FOR_PARTY'],
      [{ server_id: friendsOnly }, 403, 'INSTANCE_RESTRICTED'],
    ];
    for (const [body, status, code] of refusals)
      expectProblem(await partyJoin(leader, worldId, body), status, code);
    expect(await reservationRows([leader.user.id, member.user.id])).toEqual(before);
    expect(await invitationsOf(friendsOnly)).toEqual([
      { user_id: leader.user.id, invited_by: owner.user.id },
    ]);
    // Invited too, the member is admitted: the party goes there together.
    await expectStatus(201, 'POST', `/api/servers/${friendsOnly}/invites`, owner, {
      user_id: member.user.id,
    });
    const placed = answered(await partyJoin(leader, worldId, { server_id: friendsOnly }));
    expect(placed.party_placement).toEqual({
      server_id: friendsOnly,
      user_ids: [leader.user.id, member.user.id],
    });
    await stopServers(worldId, otherWorld);
  });

  it('with access friends or invite picks or starts a server the leader owns, inviting every placed member to it; a member blocked either way with the leader is refused 403 INSTANCE_RESTRICTED', async () => {
    const [owner, leader, a, b, stranger] = await users(5);
    const party = await partyOf(leader, [a, b]);
    await online(a, b);
    const worldId = await publicWorld(owner);
    // A server of the owner's with the same access is not the leader's: it is not taken.
    answered(await joinWith(owner, worldId, { access: 'invite' }));
    const first = answered(await partyJoin(leader, worldId, { access: 'invite' }));
    expect(await get(leader, first.server_id)).toMatchObject({
      access: 'invite',
      owner_id: leader.user.id,
      players: 3,
    });
    expect(await invitationsOf(first.server_id)).toEqual(
      [a, b]
        .map((u) => ({ user_id: u.user.id, invited_by: leader.user.id }))
        .sort((x, y) => (x.user_id < y.user_id ? -1 : 1)),
    );
    for (const member of [a, b]) answered(await joinWith(member, worldId, { server_id: first.server_id }));
    expectProblem(
      await joinWith(stranger, worldId, { server_id: first.server_id }),
      403,
      'INSTANCE_RESTRICTED',
    );
    // Again: the leader's own invite server with room is taken, nothing is started.
    expect(answered(await partyJoin(leader, worldId, { access: 'invite' })).server_id).toBe(first.server_id);
    expect(launchesOf(dir, worldId)).toHaveLength(2);

    await expectStatus(204, 'PUT', `/api/blocks/${leader.user.id}`, b);
    const before = await reservationRows([leader, a, b].map((u) => u.user.id));
    for (const access of ['friends', 'invite'])
      expectProblem(await partyJoin(leader, worldId, { access }), 403, 'INSTANCE_RESTRICTED');
    expect(await reservationRows([leader, a, b].map((u) => u.user.id))).toEqual(before);
    expect(await serversOfWorlds(app().db, [worldId])).toHaveLength(2);
    // A public server admits whoever reads the world: the block does not refuse it.
    const open = answered(await partyJoin(leader, worldId));
    expect(open.party_placement?.user_ids).toEqual(party.members.map((m) => m.user_id));
    await stopServers(worldId);
  });

  it('refuses a private world its owner leads the party into with 403 INSTANCE_RESTRICTED, and one the leader may not read with 404, writing nothing', async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    await online(member);
    const own = (await createWorld(app(), leader.access_token, { visibility: 'private' })).worldId;
    const hidden = (await createWorld(app(), owner.access_token, { visibility: 'private' })).worldId;
    expectProblem(await partyJoin(leader, own), 403, 'INSTANCE_RESTRICTED');
    expectProblem(await partyJoin(leader, own, { access: 'invite' }), 403, 'INSTANCE_RESTRICTED');
    expectProblem(await partyJoin(leader, hidden), 404, 'NOT_FOUND');
    expect(await serversOfWorlds(app().db, [own, hidden])).toEqual([]);
    expect(await reservationRows([leader.user.id, member.user.id])).toEqual([]);
  });

  it("answers the spawn limits' refusals as any join, writing nothing: the leader's live servers at GAMESERVER_MAX_LIVE_PER_USER is 409 QUOTA_EXCEEDED", async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    await online(member);
    const worlds = await Promise.all([1, 2, 3, 4].map(() => publicWorld(owner)));
    for (const worldId of worlds.slice(0, 3)) await join(leader, worldId);
    const placedBefore = await reservationRows([leader.user.id, member.user.id]);
    const refused = await partyJoin(leader, worlds[3] as string);
    expectProblem(refused, 409, 'QUOTA_EXCEEDED');
    expect(refused.json()).toMatchObject({ limit: 3 });
    expect(await serversOfWorlds(app().db, [worlds[3] as string])).toEqual([]);
    expect(await reservationRows([leader.user.id, member.user.id])).toEqual(placedBefore);
    await stopServers(...worlds);
  });

  it('never puts more than GAMESERVER_MAX_PLAYERS on a server when parties race for its last places, nor splits a party', async () => {
    const owner = (await users(1))[0];
    const worldId = await publicWorld(owner);
    const named = await serverWith(owner, worldId, 2);
    const pair = async () => {
      const [leader, member] = await users(2);
      await partyOf(leader, [member]);
      await online(member);
      return [leader, member] as const;
    };
    const [first, second, third, fourth] = [await pair(), await pair(), await pair(), await pair()];
    const racing = await Promise.all(
      [first, second].map(([leader]) => partyJoin(leader, worldId, { server_id: named.server_id })),
    );
    expect(racing.map((answer) => answer.statusCode).sort()).toEqual([200, 409]);
    expectProblem(
      racing.find((answer) => answer.statusCode === 409) as LightMyRequestResponse,
      409,
      'NO_ROOM_FOR_PARTY',
    );
    expect((await get(owner, named.server_id)).players).toBe(4);

    const open = await serverWith(owner, worldId, 2);
    const answers = (await Promise.all([third, fourth].map(([leader]) => partyJoin(leader, worldId)))).map(
      answered,
    );
    expect(answers.map((answer) => answer.server_id)).toContain(open.server_id);
    expect(new Set(answers.map((answer) => answer.server_id)).size).toBe(2);
    for (const [index, [leader, member]] of [third, fourth].entries()) {
      const serverId = answers[index]?.server_id as string;
      for (const user of [leader, member])
        expect(await reservationsOf(app().db, user.user.id)).toEqual([serverId]);
    }
    for (const serverId of await serversOfWorlds(app().db, [worldId]))
      expect((await get(owner, serverId)).players).toBeLessThanOrEqual(4);
    expect((await get(owner, open.server_id)).players).toBe(4);
    await stopServers(worldId);
  });

  it('is typed in AtriumClient: the leader calls worlds.join with party, a member hears party.follow with on and joins the server named', async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    const worldId = await publicWorld(owner);
    const options = { httpUrl: app().httpUrl, wsUrl: app().wsUrl, WebSocket };
    const [leaderClient, memberClient] = [
      new AtriumClient({ ...options, accessToken: leader.access_token }),
      new AtriumClient({ ...options, accessToken: member.access_token }),
    ];
    try {
      await memberClient.ready();
      const heard = new Promise<PartyFollowEvent>((resolve) => memberClient.on('party.follow', resolve));
      const answer = await leaderClient.call('worlds.join', { world_id: worldId, party: true });
      expect(answer.party_placement).toEqual({
        server_id: answer.server_id,
        user_ids: [leader.user.id, member.user.id],
      });
      const event = await heard;
      const followed = await memberClient.call('worlds.join', {
        world_id: event.world_id,
        server_id: event.server_id,
      });
      expect(followed).toEqual({ server_id: answer.server_id, world_id: worldId, address: answer.address });
    } finally {
      leaderClient.close();
      memberClient.close();
    }
    await stopServers(worldId);
  });
});

/**
 * A party placed on a starting server, with servers that report nothing until the test reports
 * for them: the places are held at once, the leader's answer and the members' `party.follow` wait
 * for the server to be ready. Servers hold four.
 */
describe('a party joining a world whose server is starting', () => {
  const { command, dir } = manualCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_READY_TIMEOUT_MS: 30_000,
    GAMESERVER_MAX_PLAYERS: 4,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
  });
  const { get, joinWith, partyJoin, readyAll, expectStatus } = gameServerCalls(app);
  const { users, partyOf } = partyCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  /** The server a user's reservation points at, once it does. */
  const placedOn = (user: TokenResponse) =>
    vi.waitFor(
      async () => {
        const [serverId] = await reservationsOf(app().db, user.user.id);
        expect(serverId).toBeDefined();
        return serverId as string;
      },
      { timeout: 15_000, interval: 20 },
    );
  /** Reports the world's servers ready once their processes recorded their launch (a moment after their rows). */
  const launchedAndReady = async (worldId: string, launches: number) => {
    await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(launches), { timeout: 15_000 });
    await readyAll(dir, worldId);
  };

  it('holds every placed member a place on the server it starts at once, and answers the leader and tells the members only once it is ready', async () => {
    const [owner, leader, a, b] = await users(4);
    const party = await partyOf(leader, [a, b]);
    const memberSockets = [await sockets.open(a.access_token), await sockets.open(b.access_token)];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const pending = partyJoin(leader, worldId);
    const serverId = await placedOn(b);
    for (const user of [leader, a]) expect(await reservationsOf(app().db, user.user.id)).toEqual([serverId]);
    expect(await get(leader, serverId)).toMatchObject({ status: 'starting', players: 3 });
    // Not ready yet: nobody has been told to follow.
    for (const socket of memberSockets) expect(socket.frames.filter(follows)).toEqual([]);

    await launchedAndReady(worldId, 1);
    const answer = answered(await pending);
    expect(answer).toMatchObject({
      server_id: serverId,
      address: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      party_placement: { server_id: serverId, user_ids: [leader, a, b].map((u) => u.user.id) },
    });
    for (const socket of memberSockets)
      expect((await socket.next(follows)).d).toEqual({
        party_id: party.id,
        world_id: worldId,
        server_id: serverId,
      });
  });

  it('takes a starting server with room for all and waits for it; a member naming it meanwhile waits too, in the place held for them', async () => {
    const [owner, stranger, leader, member] = await users(4);
    await partyOf(leader, [member]);
    const memberSocket = await sockets.open(member.access_token);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const strangerJoin = joinWith(stranger, worldId, {});
    const serverId = await placedOn(stranger);
    const pending = partyJoin(leader, worldId);
    expect(await placedOn(member)).toBe(serverId);
    const memberJoin = joinWith(member, worldId, { server_id: serverId });
    expect(await get(stranger, serverId)).toMatchObject({ status: 'starting', players: 3 });

    await launchedAndReady(worldId, 1);
    for (const response of [await pending, await strangerJoin, await memberJoin])
      expect(answered(response).server_id).toBe(serverId);
    expect((await memberSocket.next(follows)).d).toMatchObject({ server_id: serverId });
    expect((await get(stranger, serverId)).players).toBe(3);
  });

  it('answers 503 GAMESERVER_UNAVAILABLE when the server it waits for ends before it is ready, and tells nobody to follow', async () => {
    const [owner, leader, member] = await users(3);
    await partyOf(leader, [member]);
    const memberSocket = await sockets.open(member.access_token);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const pending = partyJoin(leader, worldId);
    const serverId = await placedOn(member);
    await expectStatus(204, 'DELETE', `/api/servers/${serverId}`, owner);
    expectProblem(await pending, 503, 'GAMESERVER_UNAVAILABLE');
    expect(memberSocket.frames.filter(follows)).toEqual([]);
  });
});
