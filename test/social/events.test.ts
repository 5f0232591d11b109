import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp } from '../helpers/app.js';
import { authedSocket, openedSockets, request, type TestSocket } from '../helpers/ws-client.js';
import { socialGraph } from './graph.js';

const presenceOf = (userId: string, message: string) => (frame: { t: string; d?: unknown }) =>
  frame.t === 'presence' &&
  (frame.d as { user_id: string }).user_id === userId &&
  (frame.d as { status_message: string | null }).status_message === message;

describe('social events on the gateway', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  const { expectStatus, befriend, users } = socialGraph(app);
  afterAll(() => closeAll());

  it('tells the addressee of a request, the requester of its acceptance and the other friend of an unfriend', async () => {
    const [alice, bob] = await users(2);
    const [aliceSocket, bobSocket] = await Promise.all([open(alice.access_token), open(bob.access_token)]);

    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    const asked = await bobSocket.next((f) => f.t === 'social.friend_request');
    expect(asked.d).toEqual({
      from: { id: alice.user.id, username: alice.user.username },
      created_at: expect.any(String),
    });

    await expectStatus(200, 'POST', `/api/friends/requests/${alice.user.id}/accept`, bob);
    const accepted = await aliceSocket.next((f) => f.t === 'social.friend_accepted');
    expect(accepted.d).toEqual({ user: { id: bob.user.id, username: bob.user.username } });

    await expectStatus(204, 'DELETE', `/api/friends/${bob.user.id}`, alice);
    const removed = await bobSocket.next((f) => f.t === 'social.friend_removed');
    expect(removed.d).toEqual({ user: { id: alice.user.id, username: alice.user.username } });
    // Each event went to the affected user only.
    expect(aliceSocket.frames.filter((f) => f.t.startsWith('social.'))).toEqual([]);
    expect(bobSocket.frames.filter((f) => f.t.startsWith('social.'))).toEqual([]);
  });

  it('tells the requester of an acceptance made by asking back, and a friend of a block as an unfriend', async () => {
    const [alice, bob, carol] = await users(3);
    const aliceSocket = await open(alice.access_token);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    await expectStatus(200, 'POST', '/api/friends/requests', bob, { user_id: alice.user.id });
    expect((await aliceSocket.next((f) => f.t === 'social.friend_accepted')).d).toEqual({
      user: { id: bob.user.id, username: bob.user.username },
    });

    await befriend(carol, alice);
    await expectStatus(204, 'PUT', `/api/blocks/${alice.user.id}`, carol);
    expect((await aliceSocket.next((f) => f.t === 'social.friend_removed')).d).toEqual({
      user: { id: carol.user.id, username: carol.user.username },
    });
  });

  it("stops a socket's user events once it authenticates as another user", async () => {
    const [first, second, toFirst, toSecond] = await users(4);
    const socket = await open(first.access_token);
    const reply = await request(socket, 'auth', { token: second.access_token });
    expect(reply.t).toBe('ack');
    await expectStatus(201, 'POST', '/api/friends/requests', toFirst, { user_id: first.user.id });
    await expectStatus(201, 'POST', '/api/friends/requests', toSecond, { user_id: second.user.id });
    // Events are delivered in publish order: had the first one come, it would be here already.
    const received = await socket.next((f) => f.t === 'social.friend_request');
    expect(received.d).toMatchObject({ from: { id: toSecond.user.id } });
    expect(socket.frames.filter((f) => f.t === 'social.friend_request')).toEqual([]);
  });

  it("ends both users' presence subscriptions to each other at once when one blocks the other", async () => {
    const [alice, bob, witness] = await users(3);
    const [aliceSocket, bobSocket, witnessSocket] = await Promise.all([
      open(alice.access_token),
      open(bob.access_token),
      open(witness.access_token),
    ]);
    await request(aliceSocket, 'presence.subscribe', { user_ids: [bob.user.id] });
    await request(bobSocket, 'presence.subscribe', { user_ids: [alice.user.id] });
    await request(witnessSocket, 'presence.subscribe', { user_ids: [alice.user.id, bob.user.id] });

    await request(aliceSocket, 'presence.status', { status_message: 'before' });
    await bobSocket.next(presenceOf(alice.user.id, 'before'));

    await expectStatus(204, 'PUT', `/api/blocks/${bob.user.id}`, alice);
    await request(aliceSocket, 'presence.status', { status_message: 'after' });
    await request(bobSocket, 'presence.status', { status_message: 'after' });
    // The witness still hears both, so the events went out: the blocked pair just no longer gets them.
    await witnessSocket.next(presenceOf(alice.user.id, 'after'));
    await witnessSocket.next(presenceOf(bob.user.id, 'after'));
    expect(bobSocket.frames.filter((f) => f.t === 'presence')).toEqual([]);
    expect(
      aliceSocket.frames.filter((f) => f.t === 'presence' && presenceOf(bob.user.id, 'after')(f)),
    ).toEqual([]);
  });
});

describe('a block across two instances', () => {
  let cluster: TestCluster;
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    cluster = await buildTestCluster(2);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await cluster?.close();
  });

  it("ends the blocked user's presence subscription on the other instance", async () => {
    const [one, two] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const [alice, bob, witness] = await Promise.all([
      registerUser(one),
      registerUser(one),
      registerUser(one),
    ]);
    const connect = async (url: string, user: TokenResponse) => {
      const socket = await authedSocket(url, user.access_token);
      sockets.push(socket);
      return socket;
    };
    const aliceSocket = await connect(one.wsUrl, alice);
    const bobSocket = await connect(two.wsUrl, bob);
    const witnessSocket = await connect(two.wsUrl, witness);
    for (const socket of [bobSocket, witnessSocket])
      await request(socket, 'presence.subscribe', { user_ids: [alice.user.id] });
    await request(aliceSocket, 'presence.status', { status_message: 'before' });
    await bobSocket.next(presenceOf(alice.user.id, 'before'));

    const blocked = await one.http.inject({
      method: 'PUT',
      url: `/api/blocks/${bob.user.id}`,
      headers: bearer(alice.access_token),
    });
    expect(blocked.statusCode).toBe(204);
    await request(aliceSocket, 'presence.status', { status_message: 'after' });
    await witnessSocket.next(presenceOf(alice.user.id, 'after'));
    expect(bobSocket.frames.filter((f) => f.t === 'presence')).toEqual([]);
  });
});
