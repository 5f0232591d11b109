import type { LightMyRequestResponse } from 'fastify';
import { expect, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { GameServer } from '../../protocol/gameservers.js';
import type { App } from '../../src/app.js';
import type { Database } from '../../src/platform/db.js';
import { bearer, callsAs, registerWithRole } from '../helpers/accounts.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes } from '../helpers/worlds.js';

import { launchesOf } from './fixtures/launches.js';

export { launchesOf, manualCommand, recordingCommand, silentCommand } from './fixtures/launches.js';

export function gameServerCalls(app: () => App) {
  const { call, expectStatus } = callsAs(app);
  const spawn = async (user: TokenResponse, worldId: string) =>
    (await expectStatus(202, 'POST', `/api/worlds/${worldId}/servers`, user)).json() as GameServer;
  const get = async (user: TokenResponse, serverId: string) =>
    (await expectStatus(200, 'GET', `/api/servers/${serverId}`, user)).json() as GameServer;
  /** Polls until the server leaves `starting`. */
  const settled = (user: TokenResponse, serverId: string, timeout = 15_000) =>
    vi.waitFor(
      async () => {
        const server = await get(user, serverId);
        expect(server.status).not.toBe('starting');
        return server;
      },
      { timeout, interval: 50 },
    );
  const internal = (token: string, url: string, init: { method?: 'GET' | 'PUT'; payload?: object } = {}) =>
    app().http.inject({
      method: init.method ?? 'GET',
      url,
      headers: bearer(token),
      ...(init.payload ? { payload: init.payload } : {}),
    });
  /** A new chunk at (0, 0, 0) of the room, written by `user`: one commit on the world's stream. */
  const putChunk = async (user: TokenResponse, worldId: string, roomId: string, id: string) => {
    const put = await app().http.inject({
      method: 'PUT',
      url: `/api/worlds/${worldId}/rooms/${roomId}/chunks/0/0/0`,
      headers: {
        ...bearer(user.access_token),
        'content-type': 'application/octet-stream',
        'if-none-match': '*',
      },
      payload: Buffer.from(chunkBytes(id)),
    });
    expect(put.statusCode, put.body).toBe(200);
  };
  const join = async (user: TokenResponse, worldId: string) =>
    (await expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, user)).json() as {
      server_id: string;
      address: string;
    };
  /** The server's own report of how many players it has, with its token. */
  const reportPlayers = async (token: string, players: number) => {
    const report = await internal(token, '/internal/servers/self/status', {
      method: 'PUT',
      payload: { ready: false, players },
    });
    expect(report.statusCode, report.body).toBe(200);
  };
  /** A join with a body (`access`, `server_id`), answered as it is. */
  const joinWith = (user: TokenResponse, worldId: string, body: object) =>
    call('POST', `/api/worlds/${worldId}/join`, user, body);
  /** A party join (`party: true`) by `user` with the rest of `body`, answered as it is. */
  const partyJoin = (user: TokenResponse, worldId: string, body: object = {}) =>
    call('POST', `/api/worlds/${worldId}/join`, user, { party: true, ...body });
  /** The owner's invitation of `userId` to a server, answered as it is. */
  const invite = (owner: TokenResponse, serverId: string, userId: string) =>
    call('POST', `/api/servers/${serverId}/invites`, owner, { user_id: userId });
  /** A join of the friend `userId`, answered as it is. */
  const joinFriend = (user: TokenResponse, userId: string) => call('POST', `/api/users/${userId}/join`, user);
  /** Reports every server of the world recorded in `dir` ready (again, for the ready ones: nothing changes). */
  const readyAll = async (dir: string, worldId: string) => {
    for (const launch of launchesOf(dir, worldId))
      await internal(launch['server-token'] as string, '/internal/servers/self/status', {
        method: 'PUT',
        payload: { ready: true, address: `127.0.0.1:${launch.port}` },
      });
  };
  /** Stops every live server of the worlds (as an admin), so the node's slots go to the next test. */
  const stopServers = async (...worldIds: string[]) => {
    const admin = await registerWithRole(app(), 'admin');
    for (const id of await serversOfWorlds(app().db, worldIds))
      await expectStatus(204, 'DELETE', `/api/servers/${id}`, admin);
  };
  return {
    call,
    expectStatus,
    spawn,
    get,
    settled,
    internal,
    putChunk,
    join,
    reportPlayers,
    joinWith,
    partyJoin,
    invite,
    joinFriend,
    stopServers,
    readyAll,
  };
}

/** An answer that must be the problem `code` with `status`. */
export function expectProblem(response: LightMyRequestResponse, status: number, code: string): void {
  expect({ status: response.statusCode, code: response.json().code }, response.body).toEqual({
    status,
    code,
  });
}

/** The servers a user's join reservations point at (at most one). */
export async function reservationsOf(db: Database, userId: string): Promise<string[]> {
  const rows = await queryRows<{ server_id: string }>(
    db,
    'select server_id from game_server_reservations where user_id = ?',
    [userId],
  );
  return rows.map((row) => row.server_id);
}

/** The server `userId` holds a reservation on, once they hold one (a join still waiting for its server holds it at once). */
export const reservedServer = (db: Database, userId: string): Promise<string> =>
  vi.waitFor(
    async () => {
      const [reserved] = await reservationsOf(db, userId);
      expect(reserved).toBeDefined();
      return reserved as string;
    },
    { timeout: 15_000, interval: 20 },
  );

/** The game-server rows of these worlds: what a refused spawn must not have written. */
export async function serversOfWorlds(db: Database, worldIds: string[]): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    db,
    'select id from game_servers where world_id = any(?::uuid[]) order by created_at',
    [`{${worldIds.join(',')}}`],
  );
  return rows.map((row) => row.id);
}
