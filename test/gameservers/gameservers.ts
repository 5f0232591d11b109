import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { GameServer } from '../../protocol/gameservers.js';
import type { App } from '../../src/app.js';
import { bearer, callsAs } from '../helpers/accounts.js';
import { chunkBytes } from '../helpers/worlds.js';

const FIXTURE = new URL('./fixtures/recording-server.mjs', import.meta.url).pathname;

/** A GAMESERVER_COMMAND running the reference server, recording each launch's arguments in `dir`. */
export function recordingCommand(): { command: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'atrium-gs-'));
  return { command: JSON.stringify([process.execPath, FIXTURE, dir]), dir };
}

/** The launch arguments recorded for servers of `worldId`, as name -> value, with what each printed. */
export function launchesOf(dir: string, worldId: string): Record<string, string>[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file): Record<string, string> => {
      const args = JSON.parse(readFileSync(join(dir, file), 'utf8')) as string[];
      const output = join(dir, file.replace(/\.json$/, '.out'));
      return {
        ...Object.fromEntries(
          args.flatMap((arg, i) => (arg.startsWith('--') ? [[arg.slice(2), args[i + 1] ?? '']] : [])),
        ),
        output: existsSync(output) ? readFileSync(output, 'utf8') : '',
      };
    })
    .filter((launch) => launch['world-id'] === worldId);
}

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
  return { call, expectStatus, spawn, get, settled, internal, putChunk };
}
