import { describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { request, TestSocket } from '../helpers/ws-client.js';
import { gameServerCalls, launchesOf, reservationsOf, silentCommand } from './gameservers.js';

/**
 * Join reservations (docs/gameservers.md, "Reservations"): a user holds one, counts once per
 * server, and a server's own player report replaces the reservations made before it. The servers
 * here report ready and never a player count, so the counts are the ones these tests report.
 */
describe('join reservations', () => {
  const { command, dir } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_MAX_PLAYERS: 2 });
  const { get, join, reportPlayers } = gameServerCalls(app);
  const tokenOf = (worldId: string) => launchesOf(dir, worldId)[0]?.['server-token'] as string;

  it('counts a user once however often they join a world: thirty joins hold one place and start one server', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const player = await registerUser(app());
    const joins = await Promise.all(Array.from({ length: 30 }, () => join(player, worldId)));
    const serverId = joins[0]?.server_id as string;
    expect(new Set(joins.map((answer) => answer.server_id))).toEqual(new Set([serverId]));
    expect(launchesOf(dir, worldId)).toHaveLength(1);
    expect((await get(owner, serverId)).players).toBe(1);
    expect(await reservationsOf(app().db, player.user.id)).toEqual([serverId]);

    // Others still count: the second player fills the server (two places), the third starts another.
    const [second, third] = [await registerUser(app()), await registerUser(app())];
    expect((await join(second, worldId)).server_id).toBe(serverId);
    expect((await get(owner, serverId)).players).toBe(2);
    expect((await join(third, worldId)).server_id).not.toBe(serverId);
    expect(launchesOf(dir, worldId)).toHaveLength(2);
  });

  it('moves the one reservation a user holds when they join another world, and the server left counts them no more', async () => {
    const owner = await registerUser(app());
    const first = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const second = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const player = await registerUser(app());
    const left = await join(player, first.worldId);
    expect((await get(owner, left.server_id)).players).toBe(1);
    const moved = await join(player, second.worldId);
    expect((await get(owner, left.server_id)).players).toBe(0);
    expect((await get(owner, moved.server_id)).players).toBe(1);
    expect(await reservationsOf(app().db, player.user.id)).toEqual([moved.server_id]);
  });

  it("lets a server's own player report replace the reservations made before it, and counts the ones made after", async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const [a, b, c] = [await registerUser(app()), await registerUser(app()), await registerUser(app())];
    const { server_id } = await join(a, worldId);
    await join(b, worldId);
    expect((await get(owner, server_id)).players).toBe(2);
    // One of the two never connected: the server sees one player, and the full server has room again.
    await reportPlayers(tokenOf(worldId), 1);
    expect((await get(owner, server_id)).players).toBe(1);
    expect((await join(c, worldId)).server_id).toBe(server_id);
    expect((await get(owner, server_id)).players).toBe(2);
    expect(launchesOf(dir, worldId)).toHaveLength(1);
  });
});

describe('an idle game server', () => {
  const { command, dir } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_IDLE_STOP_SECONDS: 2 });
  const { spawn, settled, get, internal, reportPlayers } = gameServerCalls(app);
  const stopped = (owner: Parameters<typeof get>[0], serverId: string) =>
    vi.waitFor(
      async () => {
        const server = await get(owner, serverId);
        expect(server.status).toBe('stopped');
        return server;
      },
      { timeout: 15_000, interval: 50 },
    );

  it('stops after GAMESERVER_IDLE_STOP_SECONDS with no players and no reservation: token revoked, process stopped, sockets closed', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    expect(server.status).toBe('ready');
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    const socket = await TestSocket.connect(app().wsUrl);
    try {
      expect(await request(socket, 'auth', { token })).toMatchObject({ t: 'ack' });
      expect(await stopped(owner, server.server_id)).toMatchObject({
        error: 'The server had no players and no join reservation for 2 s.',
        ended_at: expect.any(String),
      });
      expect((await internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
      expect((await socket.closed).code).toBe(CloseCode.SESSION_ENDED);
      await vi.waitFor(() =>
        expect(app().modules.gameservers.spawner.runningIds()).not.toContain(server.server_id),
      );
    } finally {
      socket.close();
    }
  });

  it('keeps running while its report says it has players, and stops once it reports none', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    await reportPlayers(token, 3);
    // A sweep an hour from now still finds players there.
    const inAnHour = new Date(Date.now() + 3_600_000);
    expect(await app().modules.gameservers.stopIdle(inAnHour)).not.toContain(server.server_id);
    expect((await get(owner, server.server_id)).status).toBe('ready');
    await reportPlayers(token, 0);
    expect((await stopped(owner, server.server_id)).error).toContain('no players');
  });
});
