import { expect, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { gameServerCalls, launchesOf } from '../gameservers/gameservers.js';
import { bearer } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';

/** Creates a board as an admin; answers its id. */
export async function createBoard(
  app: Pick<TestApp, 'http'>,
  adminToken: string,
  settings: Record<string, unknown> & { id: string },
): Promise<string> {
  const created = await app.http.inject({
    method: 'POST',
    url: '/api/admin/leaderboards',
    headers: bearer(adminToken),
    payload: settings,
  });
  if (created.statusCode !== 201) throw new Error(`createBoard: ${created.statusCode} ${created.body}`);
  return settings.id;
}

/** A live game server token: a world of `owner` with a server started by the silent command. */
export async function serverToken(
  app: () => App,
  servers: { dir: string },
  owner: TokenResponse,
): Promise<string> {
  const { worldId } = await createWorld(app(), owner.access_token);
  await gameServerCalls(app).spawn(owner, worldId);
  return vi.waitFor(
    () => {
      const launched = launchesOf(servers.dir, worldId)[0]?.['server-token'];
      expect(launched).toBeDefined();
      return launched as string;
    },
    { timeout: 15_000, interval: 50 },
  );
}

/** Calls as a user or a server token: the answer's status and JSON. */
export function leaderboardCalls(app: () => Pick<App, 'http'>) {
  return async (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    token: string | undefined,
    payload?: object,
    // biome-ignore lint/suspicious/noExplicitAny: an answer's JSON, checked field by field by the tests.
  ): Promise<{ status: number; body: any; headers: Record<string, unknown> }> => {
    const response = await app().http.inject({
      method,
      url,
      headers: token ? bearer(token) : {},
      ...(payload ? { payload } : {}),
    });
    return {
      status: response.statusCode,
      body: response.body ? response.json() : null,
      headers: response.headers,
    };
  };
}
