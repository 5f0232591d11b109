import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { createBoard } from '../leaderboards/leaderboards.js';
import type { RestName, Row } from './parity-types.js';

/** The leaderboard rows of the parity table: a board per deleting or creating run, one shared to read. */

type LeaderboardName = Extract<
  RestName,
  | `leaderboards.${string}`
  | `internal.leaderboards.${string}`
  | `tournaments.${string}`
  | `internal.tournaments.${string}`
>;

export function leaderboardRows(
  appOf: () => TestApp,
  serverToken: (me: TokenResponse) => Promise<string>,
): { [N in LeaderboardName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  const call = (method: 'DELETE' | 'POST', url: string, token: string) =>
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
  const hour = 3600_000;
  const window = () => ({
    start_at: new Date(Date.now() - hour).toISOString(),
    end_at: new Date(Date.now() + hour).toISOString(),
  });
  /** An active tournament anyone may submit to without joining. */
  let open: Promise<string> | undefined;
  const openTournament = () => {
    open ??= (async () => {
      const id = `parity-open-${process.pid}`;
      const created = await appOf().http.inject({
        method: 'POST',
        url: '/api/admin/tournaments',
        headers: bearer((await anAdmin()).access_token),
        payload: { id, title: 'Parity cup', join_required: false, operator: 'set', ...window() },
      });
      if (created.statusCode !== 201) throw new Error(`tournament: ${created.statusCode} ${created.body}`);
      return id;
    })();
    return open;
  };
  const aTournament = async () => {
    const id = boardId();
    const created = await appOf().http.inject({
      method: 'POST',
      url: '/api/admin/tournaments',
      headers: bearer((await anAdmin()).access_token),
      payload: { id, title: 'Parity cup', ...window() },
    });
    if (created.statusCode !== 201) throw new Error(`tournament: ${created.statusCode} ${created.body}`);
    return id;
  };
  /** The tournament `id` created anew (deleted first), so each run makes its first submission to it. */
  const renewed = async (name: string) => {
    const id = `parity-${name}-${process.pid}`;
    const token = (await anAdmin()).access_token;
    await call('DELETE', `/api/admin/tournaments/${id}`, token);
    const created = await appOf().http.inject({
      method: 'POST',
      url: '/api/admin/tournaments',
      headers: bearer(token),
      payload: { id, title: 'Parity cup', join_required: false, operator: 'set', ...window() },
    });
    if (created.statusCode !== 201) throw new Error(`tournament: ${created.statusCode} ${created.body}`);
    return id;
  };
  const createdTournament = `parity-tournament-${process.pid}`;
  // Fixed times: both runs answer the same tournament.
  const fixedWindow = { start_at: '2030-01-01T00:00:00.000Z', end_at: '2030-01-08T00:00:00.000Z' };
  return {
    'tournaments.admin.create': {
      prepare: async () => {
        const token = (await anAdmin()).access_token;
        await call('DELETE', `/api/admin/tournaments/${createdTournament}`, token);
        return {
          token,
          input: { id: createdTournament, title: 'Weekly cup', max_size: 64, ...fixedWindow },
        };
      },
    },
    'tournaments.admin.delete': {
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { tournament_id: await aTournament() },
      }),
    },
    'tournaments.list': {
      prepare: ({ me }) => ({ token: me.access_token, input: { state: 'active', limit: 1 } }),
    },
    'tournaments.get': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { tournament_id: await openTournament() },
      }),
    },
    'tournaments.join': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { tournament_id: await openTournament() },
      }),
    },
    'tournaments.records.submit': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { tournament_id: await renewed('submit'), score: 3 },
      }),
    },
    'tournaments.records.list': {
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { tournament_id: await openTournament(), around: 'me', limit: 3 },
      }),
    },
    'tournaments.records.get': {
      prepare: async ({ me }) => {
        const id = await renewed('get');
        await appOf().http.inject({
          method: 'POST',
          url: `/api/tournaments/${id}/records`,
          headers: bearer(me.access_token),
          payload: { score: 3 },
        });
        return { token: me.access_token, input: { tournament_id: id, user_id: me.user.id } };
      },
    },
    'internal.tournaments.records.submit': {
      prepare: async ({ me, other }) => ({
        token: await serverToken(me),
        input: { tournament_id: await renewed('internal'), user_id: other.user.id, score: 9 },
      }),
    },
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
