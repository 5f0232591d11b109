import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

/** LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT per user per window, boards together (docs/leaderboards.md). */
describe('the leaderboard submission rate', () => {
  const app = useTestApp({
    LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 3,
    LEADERBOARD_SUBMIT_RATE_LIMIT_WINDOW_SECONDS: 3600,
  });
  const call = leaderboardCalls(app);
  let admin: TokenResponse;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
  });

  it('refuses submissions past the limit, across boards, with 429 and Retry-After, writing nothing', async () => {
    const alice = await registerUser(app());
    const [one, two] = [
      await createBoard(app(), admin.access_token, { id: `rate-a-${process.pid}`, operator: 'incr' }),
      await createBoard(app(), admin.access_token, { id: `rate-b-${process.pid}`, operator: 'incr' }),
    ];
    const submit = (id: string) =>
      call('POST', `/api/leaderboards/${id}/records`, alice.access_token, { score: 1 });
    expect((await submit(one)).status).toBe(200);
    expect((await submit(one)).status).toBe(200);
    expect((await submit(two)).status).toBe(200);
    const refused = await submit(two);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const mine = await call('GET', `/api/leaderboards/${two}/records/${alice.user.id}`, alice.access_token);
    expect(mine.body).toMatchObject({ score: 1, num_submissions: 1 });
  });

  it('does not count a submission the operator refused', async () => {
    const bob = await registerUser(app());
    const id = await createBoard(app(), admin.access_token, {
      id: `rate-c-${process.pid}`,
      operator: 'incr',
    });
    const submit = (score: number) =>
      call('POST', `/api/leaderboards/${id}/records`, bob.access_token, { score });
    expect((await submit(Number.MAX_SAFE_INTEGER)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await submit(1)).body.code).toBe('SCORE_OUT_OF_RANGE');
    expect((await submit(-1)).status).toBe(200);
    expect((await submit(-1)).status).toBe(200);
    expect((await submit(-1)).status).toBe(429);
  });
});
