import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { authedSocket } from '../helpers/ws-client.js';

describe('direct messages across two instances', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, { DM_RATE_LIMIT_COUNT: 2, DM_RATE_LIMIT_WINDOW_SECONDS: 60 });
  });
  afterAll(async () => {
    await cluster?.close();
  });
  const nodes = () => cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
  const send = (node: TestCluster['nodes'][0], token: string, to: string, body: string) =>
    node.http.inject({
      method: 'POST',
      url: `/api/chat/dm/${to}/messages`,
      headers: bearer(token),
      payload: { body },
    });

  it('delivers a message sent on instance A to the peer socket on instance B', async () => {
    const [a, b] = nodes();
    const alice = await registerUser(a);
    const bob = await registerUser(b);
    const socket = await authedSocket(b.wsUrl, bob.access_token);
    try {
      const sent = await send(a, alice.access_token, bob.user.id, 'across nodes');
      expect(sent.statusCode, sent.body).toBe(201);
      expect((await socket.next((f) => f.t === 'dm.message')).d).toEqual(sent.json());
    } finally {
      socket.close();
    }
  });

  // Embedded mode is one node: its limiter lives in the process. Shared limits need Redis.
  it.skipIf(!process.env.REDIS_URL)(
    'holds one sender to one limit whichever instance each message goes through',
    async () => {
      const [a, b] = nodes();
      const alice = await registerUser(a);
      const bob = await registerUser(a);
      expect((await send(a, alice.access_token, bob.user.id, 'one')).statusCode).toBe(201);
      expect((await send(b, alice.access_token, bob.user.id, 'two')).statusCode).toBe(201);
      const limited = await send(a, alice.access_token, bob.user.id, 'three');
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['retry-after']).toBeDefined();
    },
  );
});
