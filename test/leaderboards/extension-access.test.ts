import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

const EXTENSION = fileURLToPath(new URL('./fixtures/leaderboards-access.mjs', import.meta.url));

/** Server extensions' ctx.leaderboards (docs/extensions.md, "The ctx object"). */
describe('ctx.leaderboards', () => {
  const app = useTestApp({ EXTENSIONS: EXTENSION });
  const call = leaderboardCalls(app);
  let admin: TokenResponse;
  let alice: TokenResponse;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
    alice = await registerUser(app());
  });
  const rpc = async (name: string, input: object) => {
    const answer = await call('POST', `/api/rpc/${name}`, alice.access_token, input);
    expect(answer.status).toBe(200);
    return answer.body.result as { value?: { items: { user_id: string }[] }; code?: string };
  };

  it('submits to an authoritative board as a game server does, and reads its standings', async () => {
    const id = await createBoard(app(), admin.access_token, {
      id: `ext-${process.pid}`,
      authoritative: true,
      operator: 'incr',
    });
    const awarded = await rpc('award', { leaderboard_id: id, user_id: alice.user.id, score: 5 });
    expect(awarded.value).toMatchObject({ leaderboard_id: id, user_id: alice.user.id, score: 5, rank: 1 });
    const standings = await rpc('standings', { id, query: { limit: 10 } });
    expect(standings.value?.items.map((r) => r.user_id)).toEqual([alice.user.id]);
    expect((await rpc('standings', { id, query: { user_ids: alice.user.id } })).value?.items).toHaveLength(1);
  });

  it('refuses bad arguments, unknown standings and the caller-relative reads with their codes', async () => {
    const id = await createBoard(app(), admin.access_token, { id: `ext-bad-${process.pid}` });
    expect((await rpc('award', { leaderboard_id: id, user_id: alice.user.id, score: 1.5 })).code).toBe(
      'VALIDATION_FAILED',
    );
    expect((await rpc('award', { leaderboard_id: 'nope', user_id: alice.user.id, score: 1 })).code).toBe(
      'NOT_FOUND',
    );
    expect((await rpc('award', [])).code).toBe('VALIDATION_FAILED');
    expect((await rpc('standings', { id, query: { around: 'me' } })).code).toBe('VALIDATION_FAILED');
    expect((await rpc('standings', { id, query: { friends: 'true' } })).code).toBe('VALIDATION_FAILED');
    expect((await rpc('standings.tournament', { id: 'nope' })).code).toBe('NOT_FOUND');
    expect(
      (await rpc('award.tournament', { tournament_id: 'nope', user_id: alice.user.id, score: 1 })).code,
    ).toBe('NOT_FOUND');
  });
});
