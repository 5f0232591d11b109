import { afterAll, beforeAll, expect, it } from 'vitest';
import { channel, userTopic } from '../../src/platform/bus.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { describeOnRedisTopologies } from '../helpers/redis-topologies.js';
import { authedSocket, request, TestSocket } from '../helpers/ws-client.js';

/**
 * Two nodes of the service on one private Redis Cluster, then on one Sentinel-watched primary:
 * what one node publishes reaches the sockets of the other, through sharded pub/sub on the Cluster.
 */
describeOnRedisTopologies((servers) => {
  let cluster: TestCluster;
  const nodes = () => cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];

  beforeAll(async () => {
    cluster = await buildTestCluster(2, servers().settings);
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('runs both nodes on the Redis the settings name, not the in-process store', () => {
    for (const node of nodes()) expect(node.kv.kind).toBe('redis');
  });

  it('delivers a direct message sent on one node to the socket on the other, and replays it after a reconnect', async () => {
    const [a, b] = nodes();
    const alice = await registerUser(a);
    const bob = await registerUser(b);
    const socket = await authedSocket(b.wsUrl, bob.access_token);
    const sent = await a.http.inject({
      method: 'POST',
      url: `/api/chat/dm/${bob.user.id}/messages`,
      headers: bearer(alice.access_token),
      payload: { body: 'across nodes' },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    const live = await socket.next((f) => f.t === 'dm.message');
    expect(live.d).toEqual(sent.json());
    socket.close();

    const { offset, epoch } = live.pos as { offset: number; epoch: string };
    const again = await TestSocket.connect(a.wsUrl);
    try {
      again.sendFrame({
        t: 'auth',
        id: 0,
        d: { token: bob.access_token, recover: { offset: offset - 1, epoch } },
      });
      expect((await again.next((f) => f.t === 'dm.message')).d).toEqual(sent.json());
      expect((await again.next((f) => f.id === 0)).d).toMatchObject({ recovered: true });
    } finally {
      again.close();
    }
  });

  it('pushes a presence change made on one node to a watcher on the other', async () => {
    const [a, b] = nodes();
    const watcher = await registerUser(b);
    const subject = await registerUser(a);
    const socket = await authedSocket(b.wsUrl, watcher.access_token);
    const subjectSocket = await authedSocket(a.wsUrl, subject.access_token);
    try {
      await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] });
      await request(subjectSocket, 'presence.status', { status_message: 'on the other node' });
      const status = await socket.next(
        (f) => f.t === 'presence' && (f.d as { status_message: string | null }).status_message !== null,
      );
      expect(status.d).toMatchObject({ user_id: subject.user.id, status_message: 'on the other node' });
    } finally {
      socket.close();
      subjectSocket.close();
    }
  });

  it("fills the gap of a socket whose node's shard subscriber was cut off while an event was published (Cluster)", async (ctx) => {
    const cut = servers().cutSubscribers?.bind(servers());
    if (!cut) ctx.skip();
    const [a, b] = nodes();
    const bob = await registerUser(a);
    const socket = await authedSocket(a.wsUrl, bob.access_token);
    try {
      const topic = userTopic(bob.user.id);
      await b.bus.publish(topic, { t: 'dm.message', d: { body: 'before' } });
      await socket.next((f) => f.t === 'dm.message' && (f.d as { body: string }).body === 'before');
      // Published once Redis dropped the subscriber and before node A could subscribe anew: it
      // reaches node A's socket only if A fills the gap from the topic's history.
      await (cut as (hashTag: string) => Promise<void>)(channel(topic));
      await b.bus.publish(topic, { t: 'dm.message', d: { body: 'during' } });
      const filled = await socket.next(
        (f) =>
          (f.t === 'dm.message' && (f.d as { body: string }).body === 'during') || f.t === 'stream.reset',
        15_000,
      );
      expect(filled.t).toBe('dm.message');
    } finally {
      socket.close();
    }
  });
});
