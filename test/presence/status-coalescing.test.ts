import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { authedSocket, request } from '../helpers/ws-client.js';

type Node = TestCluster['nodes'][number];

/**
 * Status messages are written to the database coalesced (STATUS_FLUSH_MS, here long enough that
 * only explicit flushes write), while the caller and subscribers see each one at once, on any node.
 */
describe('coalesced status message writes', () => {
  let cluster: TestCluster;
  const node = (i: number) => cluster.nodes[i] as Node;

  beforeAll(async () => {
    cluster = await buildTestCluster(2, { STATUS_FLUSH_MS: 60_000 });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  const setStatus = (on: Node, token: string, message: string) =>
    on.http.inject({
      method: 'PUT',
      url: '/api/presence/status',
      headers: bearer(token),
      payload: { status_message: message },
    });
  const statusInMe = async (on: Node, token: string) =>
    (await on.http.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token) })).json()
      .status_message;
  const stored = async (userId: string) =>
    (
      await queryRows<{ status_message: string | null }>(
        node(0).db,
        'select status_message from users where id = ?',
        [userId],
      )
    )[0]?.status_message;
  const flushAll = () => Promise.all(cluster.nodes.map((n) => n.modules.presence.flushStatusMessages()));

  it('answers a burst at once and writes only the latest message, in one flush', async () => {
    const user = await registerUser(node(0));
    for (let i = 1; i <= 20; i++) {
      const answer = await setStatus(node(0), user.access_token, `message ${i}`);
      expect(answer.json()).toEqual({ status_message: `message ${i}` });
    }
    expect(await stored(user.user.id)).toBeNull();
    expect(await statusInMe(node(0), user.access_token)).toBe('message 20');
    await flushAll();
    expect(await stored(user.user.id)).toBe('message 20');
  });

  it("shows the caller's own message on another node before it is written", async () => {
    const user = await registerUser(node(0));
    await setStatus(node(0), user.access_token, 'set on the first node');
    expect(await stored(user.user.id)).toBeNull();
    expect(await statusInMe(node(1), user.access_token)).toBe('set on the first node');
  });

  it('reads a cleared message back as null before the flush, and writes the clearing', async () => {
    const user = await registerUser(node(0));
    await setStatus(node(0), user.access_token, 'about to clear');
    await flushAll();
    expect(await stored(user.user.id)).toBe('about to clear');
    await setStatus(node(1), user.access_token, '   ');
    expect(await statusInMe(node(0), user.access_token)).toBeNull();
    await flushAll();
    expect(await stored(user.user.id)).toBeNull();
  });

  it('writes the newest message across nodes, whichever node flushes last', async () => {
    const user = await registerUser(node(0));
    await setStatus(node(0), user.access_token, 'older, on the first node');
    await setStatus(node(1), user.access_token, 'newer, on the second node');
    await node(1).modules.presence.flushStatusMessages();
    await node(0).modules.presence.flushStatusMessages();
    expect(await stored(user.user.id)).toBe('newer, on the second node');
  });

  it('tells subscribers on another node at once, before the database has the message', async () => {
    const subject = await registerUser(node(0));
    const watcher = await registerUser(node(1));
    const socket = await authedSocket(node(1).wsUrl, watcher.access_token);
    try {
      expect((await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] })).t).toBe('ack');
      await setStatus(node(0), subject.access_token, 'heard at once');
      const event = await socket.next(
        (f) => f.t === 'presence' && (f.d as { status_message?: string }).status_message === 'heard at once',
      );
      expect(event.d).toMatchObject({ user_id: subject.user.id, status: 'offline' });
      expect(await stored(subject.user.id)).toBeNull();
    } finally {
      socket.close();
    }
  });

  it('writes nothing for a message the validation refused', async () => {
    const user = await registerUser(node(0));
    const refused = await setStatus(node(0), user.access_token, 'x'.repeat(141));
    expect(refused.statusCode).toBe(422);
    expect(await statusInMe(node(1), user.access_token)).toBeNull();
    await flushAll();
    expect(await stored(user.user.id)).toBeNull();
  });
});
