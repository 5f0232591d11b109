import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

const REDIS_URL = process.env.REDIS_URL;
/** A database of the Redis server of its own, which this file may flush without touching the others'. */
const FLUSHED_DB = 9;
const flushableUrl = () => {
  const url = new URL(REDIS_URL as string);
  url.pathname = `/${FLUSHED_DB}`;
  return url.toString();
};

/** The rank index is a cache of PostgreSQL: a Redis that loses everything costs speed, never exactness. */
describe.skipIf(!REDIS_URL)('leaderboard ranks when Redis is flushed (needs REDIS_URL)', () => {
  const app = useTestApp(
    REDIS_URL ? { REDIS_URL: flushableUrl(), LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 } : {},
  );
  const call = leaderboardCalls(app);
  let redis: Redis;
  let users: TokenResponse[];
  let boardId: string;
  beforeAll(async () => {
    redis = new Redis(flushableUrl());
    const admin = await registerWithRole(app(), 'admin');
    users = await Promise.all(Array.from({ length: 12 }, () => registerUser(app())));
    boardId = await createBoard(app(), admin.access_token, { id: `flushed-${process.pid}`, operator: 'set' });
    for (const [i, user] of users.entries())
      await call('POST', `/api/leaderboards/${boardId}/records`, user.access_token, { score: (i * 7) % 5 });
  });
  afterAll(async () => {
    await redis.quit();
  });

  const ranks = async () =>
    (
      await call('GET', `/api/leaderboards/${boardId}/records?limit=100`, users[0]?.access_token)
    ).body.items.map((r: { user_id: string; rank: number }) => `${r.rank}:${r.user_id}`);
  const indexReady = () =>
    vi.waitFor(async () => expect((await redis.keys('*lb:*:ready')).length).toBeGreaterThan(0), {
      timeout: 20_000,
    });

  it('answers the same exact ranks after FLUSHDB, then rebuilds the index', async () => {
    const before = await ranks();
    await indexReady();
    expect(await ranks()).toEqual(before);
    await redis.flushdb();
    expect(await ranks()).toEqual(before);
    const mover = users[3] as TokenResponse;
    const moved = await call('POST', `/api/leaderboards/${boardId}/records`, mover.access_token, {
      score: 100,
    });
    expect(moved.body.rank).toBe(1);
    await indexReady();
    const after = await ranks();
    expect(after[0]).toBe(`1:${mover.user.id}`);
    expect(after).toHaveLength(before.length);
  });
});
