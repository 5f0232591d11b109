import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisKv } from '../../src/platform/kv/redis-kv.js';
import { hasRedisServer, RedisServer } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The subscriber connection lost again while it resubscribes (a Sentinel failover or a flapping
 * network can do this): its channels must not be forgotten, and the node is told it is
 * resubscribed only once they are active again.
 */
/** A generous deadline: reconnecting takes a few 100 ms attempts. */
const WAIT = { timeout: 10_000, interval: 20 };

describe.skipIf(!hasRedisServer())('Redis pub/sub resubscription (needs redis-server on PATH)', () => {
  let redis: RedisServer;
  let proxy: TcpProxy;
  let subscriberSide: RedisKv;
  let publisherSide: RedisKv;

  beforeAll(async () => {
    redis = await RedisServer.start();
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: redis.port });
    const options = { namespace: 'resubscribe:', onError: () => {} };
    subscriberSide = await RedisKv.connect(`redis://127.0.0.1:${proxy.port}`, options);
    publisherSide = await RedisKv.connect(redis.url, options);
  });

  afterAll(async () => {
    await subscriberSide?.close();
    await publisherSide?.close();
    await proxy?.close();
    await redis?.stop();
  });

  it('keeps every channel when the connection drops again before the resubscription was answered', async () => {
    const received: string[] = [];
    await subscriberSide.subscribe('room', (message) => received.push(Buffer.from(message).toString()));
    let resubscribed = 0;
    subscriberSide.onResubscribed(() => resubscribed++);
    await publisherSide.publish('room', Buffer.from('before'));
    await vi.waitFor(() => expect(received).toContain('before'), WAIT);

    // The first SUBSCRIBE after the outage is cut off; the connection after that one works.
    proxy.dropOnce((chunk) => chunk.toString('latin1').toLowerCase().includes('subscribe'));
    await proxy.setMode('refuse');
    await proxy.setMode('forward');
    await vi.waitFor(() => expect(resubscribed).toBeGreaterThan(0), WAIT);

    // Told only once the channel is active: a message published right then arrives.
    await publisherSide.publish('room', Buffer.from('after'));
    await vi.waitFor(() => expect(received).toContain('after'), WAIT);
    expect(received).toEqual(['before', 'after']);
    expect(resubscribed).toBe(1);
  });
});
