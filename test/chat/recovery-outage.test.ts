import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamPosition } from '../../protocol/stream-position.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { hasRedisServer, RedisServer } from '../helpers/redis-server.js';
import { request, TestSocket } from '../helpers/ws-client.js';

/**
 * A Redis restart loses the event history (it runs without persistence here, as a cache would):
 * recovery must degrade to `recovered: false` under a new epoch, never to an error. Played on a
 * private redis-server.
 */
describe.skipIf(!hasRedisServer())(
  'missed-event recovery across a Redis restart (needs redis-server on PATH)',
  () => {
    let redis: RedisServer;
    let app: TestApp;
    const calls = callsAs(() => app);

    beforeAll(async () => {
      redis = await RedisServer.start();
      app = await buildTestApp({ REDIS_URL: redis.url, DM_RATE_LIMIT_COUNT: 1000 });
    });

    afterAll(async () => {
      await app?.close();
      await redis?.stop();
    });

    const authenticate = async (token: string, recover?: StreamPosition) => {
      const socket = await TestSocket.connect(app.wsUrl);
      const answer = await request(socket, 'auth', { token, ...(recover ? { recover } : {}) });
      return { socket, answer };
    };

    it('answers recovered false under a new epoch, with no 5xx and no error frame, once Redis is back', async () => {
      const [alice, bob] = [await registerUser(app), await registerUser(app)];
      const first = await authenticate(alice.access_token);
      await calls.expectStatus(201, 'POST', `/api/chat/dm/${alice.user.id}/messages`, bob, { body: 'kept' });
      const last = (await first.socket.next((f) => f.t === 'dm.message')).pos as StreamPosition;
      first.socket.close();

      await redis.stop();
      await redis.start();
      // Until the connections are back, routes answer 503 (docs/operations.md); never another 5xx.
      const statuses = new Set<number>();
      await vi.waitFor(
        async () => {
          const sent = await calls.call('POST', `/api/chat/dm/${alice.user.id}/messages`, bob, {
            body: 'after',
          });
          statuses.add(sent.statusCode);
          expect(sent.statusCode).toBe(201);
        },
        { timeout: 10_000, interval: 100 },
      );
      expect([...statuses].filter((status) => status !== 201 && status !== 503)).toEqual([]);

      const again = await authenticate(alice.access_token, last);
      expect(again.answer).toMatchObject({ t: 'ack', d: { user_id: alice.user.id, recovered: false } });
      const position = (again.answer.d as { position: StreamPosition }).position;
      expect(position.epoch).not.toBe(last.epoch);
      await calls.expectStatus(201, 'POST', `/api/chat/dm/${alice.user.id}/messages`, bob, {
        body: 'new era',
      });
      const live = await again.socket.next((f) => f.t === 'dm.message');
      expect(live).toMatchObject({
        d: { body: 'new era' },
        pos: { offset: position.offset + 1, epoch: position.epoch },
      });
      again.socket.close();
    });
  },
);
