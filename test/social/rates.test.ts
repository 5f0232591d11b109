import { describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/app.js';
import { authedSocket } from '../helpers/ws-client.js';
import { socialGraph } from './graph.js';

describe('the friend request and follow rate', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 4, SOCIAL_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { call, expectStatus, rowsOf, users } = socialGraph(app);

  it('bounds request and withdraw cycles: past the limit 429 with Retry-After, and the target hears of no more', async () => {
    const [hostile, target, sentinel] = await users(3);
    const socket = await authedSocket(app().wsUrl, target.access_token);
    try {
      for (let i = 0; i < 4; i++) {
        await expectStatus(201, 'POST', '/api/friends/requests', hostile, { user_id: target.user.id });
        await expectStatus(204, 'DELETE', `/api/friends/requests/${target.user.id}`, hostile);
      }
      const refused = await call('POST', '/api/friends/requests', hostile, { user_id: target.user.id });
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect((await rowsOf(hostile.user.id)).friendships).toEqual([]);
      // A request from someone else arrives after any the refused one could have sent.
      await expectStatus(201, 'POST', '/api/friends/requests', sentinel, { user_id: target.user.id });
      await socket.next(
        (f) =>
          f.t === 'social.friend_request' && (f.d as { from: { id: string } }).from.id === sentinel.user.id,
      );
      const fromHostile = socket.frames.filter(
        (f) =>
          f.t === 'social.friend_request' && (f.d as { from: { id: string } }).from.id === hostile.user.id,
      );
      expect(fromHostile).toHaveLength(4);
    } finally {
      socket.close();
    }
  });

  it('counts follows with friend requests, spares what another user may do, and never charges a self-target', async () => {
    const [hostile, a, b, other] = await users(4);
    for (let i = 0; i < 3; i++)
      expect(
        (await call('POST', '/api/friends/requests', hostile, { user_id: hostile.user.id })).statusCode,
      ).toBe(422);
    await expectStatus(204, 'PUT', `/api/follows/${a.user.id}`, hostile);
    await expectStatus(204, 'DELETE', `/api/follows/${a.user.id}`, hostile);
    await expectStatus(204, 'PUT', `/api/follows/${a.user.id}`, hostile);
    await expectStatus(201, 'POST', '/api/friends/requests', hostile, { user_id: b.user.id });
    // The fourth of four: a follow again, idempotent, still spends one.
    await expectStatus(204, 'PUT', `/api/follows/${a.user.id}`, hostile);
    const refused = await call('PUT', `/api/follows/${b.user.id}`, hostile);
    expect(refused.statusCode).toBe(429);
    expect((await rowsOf(hostile.user.id)).follows).toEqual([
      { follower_id: hostile.user.id, followed_id: a.user.id },
    ]);
    await expectStatus(204, 'PUT', `/api/follows/${b.user.id}`, other);
  });
});
