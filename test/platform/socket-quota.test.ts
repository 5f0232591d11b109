import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp } from '../helpers/app.js';
import { authedSocket, request, TestSocket } from '../helpers/ws-client.js';

const LIMIT = 3;

/** Opens a socket and sends its auth frame; answers the socket and the auth answer. */
async function attempt(wsUrl: string, user: TokenResponse) {
  const socket = await TestSocket.connect(wsUrl);
  const answer = await request(socket, 'auth', { token: user.access_token });
  return { socket, answer };
}

describe('sockets per user', () => {
  const app = useTestApp({ WS_MAX_SOCKETS_PER_USER: LIMIT });
  const opened: TestSocket[] = [];
  afterEach(() => {
    for (const socket of opened.splice(0)) socket.close();
  });
  const open = async (user: TokenResponse) => {
    const socket = await authedSocket(app().wsUrl, user.access_token);
    opened.push(socket);
    return socket;
  };

  it('refuses one more socket at auth with QUOTA_EXCEEDED and closes it with 4409, leaving the others open', async () => {
    const user = await registerUser(app());
    const sockets = [];
    for (let i = 0; i < LIMIT; i++) sockets.push(await open(user));
    const { socket, answer } = await attempt(app().wsUrl, user);
    expect(answer).toMatchObject({ t: 'error', code: 'QUOTA_EXCEEDED', limit: LIMIT });
    expect((await socket.closed).code).toBe(4409);
    for (const kept of sockets) {
      kept.sendFrame({ t: 'ping', id: 7 });
      await kept.next((f) => f.t === 'pong' && f.id === 7);
    }
    // The limit is the user's own.
    await open(await registerUser(app()));
  });

  it('frees a place when a socket closes, and does not count a socket authenticating again', async () => {
    const user = await registerUser(app());
    const sockets = [];
    for (let i = 0; i < LIMIT; i++) sockets.push(await open(user));
    expect((await request(sockets[0] as TestSocket, 'auth', { token: user.access_token })).t).toBe('ack');
    (sockets[1] as TestSocket).close();
    await (sockets[1] as TestSocket).closed;
    // Closing is noticed by the node asynchronously: retry until the place is free.
    const deadline = Date.now() + 5000;
    for (;;) {
      const { socket, answer } = await attempt(app().wsUrl, user);
      opened.push(socket);
      if (answer.t === 'ack') break;
      expect(Date.now()).toBeLessThan(deadline);
    }
  });

  // The in-process store serves one node and keeps no set: the count is the node's own.
  it.skipIf(!process.env.REDIS_URL)(
    "ignores members of nodes whose lease lapsed and this node's members without a socket",
    async () => {
      const user = await registerUser(app());
      const key = `gateway:sockets:${user.user.id}`;
      await app().kv.sadd(
        key,
        'a-node-that-died/1',
        'a-node-that-died/2',
        `${app().modules.presence.nodeId}/999999`,
      );
      for (let i = 0; i < LIMIT; i++) await open(user);
      const members = await app().kv.smembers(key);
      expect(members).toHaveLength(LIMIT);
      expect(members.every((m) => m.startsWith(`${app().modules.presence.nodeId}/`))).toBe(true);
    },
  );
});

// Several nodes share Redis; the in-process store is one node's (docs/limits.md).
describe.skipIf(!process.env.REDIS_URL)('sockets per user on two nodes', () => {
  let cluster: TestCluster;
  afterEach(async () => cluster?.close());

  it('counts the sockets of every node', async () => {
    cluster = await buildTestCluster(2, { WS_MAX_SOCKETS_PER_USER: LIMIT });
    const [one, two] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const user = await registerUser(one);
    const sockets = [
      await authedSocket(one.wsUrl, user.access_token),
      await authedSocket(two.wsUrl, user.access_token),
      await authedSocket(one.wsUrl, user.access_token),
    ];
    try {
      const { socket, answer } = await attempt(two.wsUrl, user);
      expect(answer).toMatchObject({ t: 'error', code: 'QUOTA_EXCEEDED' });
      expect((await socket.closed).code).toBe(4409);
    } finally {
      for (const socket of sockets) socket.close();
    }
  });
});
