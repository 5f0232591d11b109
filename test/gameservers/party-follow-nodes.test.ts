import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Party } from '../../protocol/parties.js';
import { buildTestCluster, type TestApp, type TestCluster } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { authedSocket, type ReceivedFrame, type TestSocket } from '../helpers/ws-client.js';
import { partyCalls } from '../parties/parties.js';
import { gameServerCalls, launchesOf, manualCommand, reservationsOf, reservedServer } from './gameservers.js';

const follows = (frame: ReceivedFrame) => frame.t === 'party.follow';

/**
 * `party.follow` is owed from the placement on, in the database (migration 0040): the node that
 * hears the server is ready sends it, although the node that served the leader's join is gone.
 * Two nodes on one database and one KV store; the server runs on the one that stays.
 */
describe('a party placed on a starting server whose leader joined through a node that closed', () => {
  const { command, dir } = manualCommand();
  let cluster: TestCluster;
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    cluster = await buildTestCluster(
      2,
      {
        GAMESERVER_COMMAND: command,
        GAMESERVER_READY_TIMEOUT_MS: 30_000,
        GAMESERVER_MAX_PLAYERS: 4,
        GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 100,
      },
      // The leader's node gives up its in-flight join at once when it closes.
      (index) => (index === 0 ? { SHUTDOWN_GRACE_MS: 100 } : {}),
    );
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await cluster?.close();
  });
  // The party and game server calls take a test app; a cluster's node serves them the same way.
  const nodeAt = (index: number) => () => cluster.nodes[index] as TestApp;

  it('gets party.follow once, from the node the server reports ready to', async () => {
    const [leaderNode, survivor] = [nodeAt(0), nodeAt(1)];
    const { users, partyOf, expectStatus } = partyCalls(survivor);
    const [owner, stranger, leader, a, b] = await users(5);
    const party: Party = await partyOf(leader, [a, b]);
    // Online through sockets on the node that stays.
    for (const member of [a, b]) sockets.push(await authedSocket(survivor().wsUrl, member.access_token));
    const memberSockets = sockets.slice(-2);
    const { worldId } = await createWorld(survivor(), owner.access_token, { visibility: 'public' });
    // A stranger's join through the surviving node starts the world's server there.
    const strangerJoin = gameServerCalls(survivor).joinWith(stranger, worldId, {});
    const serverId = await reservedServer(survivor().db, stranger.user.id);
    // The leader's party join through the other node places the party on that starting server.
    const leaderJoin = gameServerCalls(leaderNode).partyJoin(leader, worldId);
    for (const member of [leader, a, b]) await reservedServer(survivor().db, member.user.id);
    expect(await reservationsOf(survivor().db, a.user.id)).toEqual([serverId]);

    // The leader's node closes while its join waits for the server.
    await leaderNode().close();
    await vi.waitFor(() => expect(launchesOf(dir, worldId)).toHaveLength(1), { timeout: 15_000 });
    await gameServerCalls(survivor).readyAll(dir, worldId);

    const d = { party_id: party.id, world_id: worldId, server_id: serverId };
    for (const socket of memberSockets) expect((await socket.next(follows, 15_000)).d).toEqual(d);
    expect((await strangerJoin).statusCode).toBe(200);
    // Whatever the closed node's join did once the server was ready, it owed nothing more.
    await leaderJoin.catch(() => undefined);
    // A later event on the members' own topics comes after any second follow would have: there is none.
    await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { max_size: 6 });
    for (const socket of memberSockets) {
      await socket.next((f) => f.t === 'party.updated' && (f.d as { party: Party }).party.max_size === 6);
      expect(socket.frames.filter(follows)).toEqual([]);
    }
    expect(
      await queryRows(survivor().db, 'select user_id from game_server_party_follows where server_id = ?', [
        serverId,
      ]),
    ).toEqual([]);
  });
});
