import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { createBoard } from '../leaderboards/leaderboards.js';
import type { RestName, Row } from './parity-types.js';

/** The leaderboard rows of the parity table: a board per deleting or creating run, one shared to read. */

type LeaderboardName = Extract<RestName, `leaderboards.${string}` | `internal.leaderboards.${string}`>;

export function leaderboardRows(
  appOf: () => TestApp,
  serverToken: (me: TokenResponse) => Promise<string>,
): { [N in LeaderboardName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  const call = (method: 'DELETE', url: string, token: string) =>
    appOf().http.inject({ method, url, headers: bearer(token) });
  let runs = 0;
  const createdId = `parity-created-${process.pid}`;
  const boardId = () => `parity-${process.pid}-${++runs}`;
  /** A set board both runs read, with the reader's record in it. */
  let shared: Promise<string> | undefined;
  const sharedBoard = () => {
    shared ??= (async () =>
      createBoard(appOf(), (await anAdmin()).access_token, { id: boardId(), operator: 'set' }))();
    return shared;
  };
  const aBoard = async (settings: Record<string, unknown> = {}) =>
    createBoard(appOf(), (await anAdmin()).access_token, { id: boardId(), ...settings });
  return {
    // Each run creates the same id, deleted first, so both answers name it.
    'leaderboards.admin.create': {
      prepare: async () => {
        const token = (await anAdmin()).access_token;
        await call('DELETE', `/api/admin/leaderboards/${createdId}`, token);
        return {
          token,
          input: { id: createdId, sort: 'asc', reset_schedule: '0 0 * * 1', metadata: { season: 1 } },
        };
      },
    },
    'leaderboards.admin.delete': {
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { leaderboard_id: await aBoard() },
      }),
    },
    'leaderboards.list': { prepare: ({ me }) => ({ token: me.access_token, input: { limit: 2 } }) },
    'leaderboards.get': {
      prepare: async ({ me }) => ({ token: me.access_token, input: { leaderboard_id: await sharedBoard() } }),
    },
    // Each run submits a first record (the previous one deleted), so both count one submission.
    'leaderboards.records.submit': {
      prepare: async ({ me }) => {
        const id = await sharedBoard();
        await call('DELETE', `/api/leaderboards/${id}/records/me`, me.access_token);
        return {
          token: me.access_token,
          input: { leaderboard_id: id, score: 42, subscore: 7, metadata: { car: 'red' } },
        };
      },
    },
    'leaderboards.records.list': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { leaderboard_id: await sharedBoard(), around: 'me', limit: 5 },
      }),
    },
    'leaderboards.records.get': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { leaderboard_id: await sharedBoard(), user_id: me.user.id },
      }),
    },
    'leaderboards.records.deleteMine': {
      prepare: async ({ me }) => ({ token: me.access_token, input: { leaderboard_id: await aBoard() } }),
    },
    'leaderboards.admin.deleteRecord': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { leaderboard_id: await aBoard(), user_id: me.user.id, reason: 'a cheater' },
      }),
    },
    'internal.leaderboards.records.submit': {
      prepare: async ({ me, other }) => {
        const [id, token] = [await sharedBoard(), await serverToken(me)];
        await call('DELETE', `/internal/leaderboards/${id}/records/${other.user.id}`, token);
        return { token, input: { leaderboard_id: id, user_id: other.user.id, score: 5 } };
      },
    },
    'internal.leaderboards.records.delete': {
      prepare: async ({ me, other }) => ({
        token: await serverToken(me),
        input: { leaderboard_id: await aBoard(), user_id: other.user.id },
      }),
    },
  };
}
