import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import {
  NODE_REGISTRY_KEY,
  nodeClaimKey,
  nodeLeaseKey,
  nodeUsersKey,
} from '../../src/modules/presence/node-lease.js';
import { presenceKey } from '../../src/modules/presence/presence.service.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp } from '../helpers/app.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

// A short lease: renewed, and other nodes checked, every third of a second.
const LEASE = { NODE_LEASE_SECONDS: 1 };

type Node = App & { wsUrl: string };

/**
 * One node for the tests of a single node: each makes its own users and dead nodes, and the one
 * that removes the node's own records runs last.
 */
const leased = useTestApp(LEASE);

/**
 * Writes what a node killed with -9 leaves behind: a registry entry and a user set, but no lease,
 * and its users' presence keys still alive.
 */
async function leaveDeadNode(app: App, userIds: string[], deadId = `dead-${randomUUID()}`): Promise<string> {
  for (const id of userIds) await app.kv.swap(presenceKey(id), String(Date.now()), 60_000);
  await app.kv.sadd(nodeUsersKey(deadId), ...userIds);
  await app.kv.sadd(NODE_REGISTRY_KEY, deadId);
  return deadId;
}

const statusOf = async (app: App, viewer: TokenResponse, userId: string) => {
  const response = await app.http.inject({
    method: 'POST',
    url: '/api/presence/presence',
    headers: bearer(viewer.access_token),
    payload: { user_ids: [userId] },
  });
  return (response.json() as { presence: Record<string, string> }).presence[userId];
};

const isStatus = (status: string) => (f: { t: string; d?: unknown }) =>
  f.t === 'presence' && (f.d as { status: string }).status === status;

async function watch(node: Node, userIds: string[]): Promise<{ socket: TestSocket; viewer: TokenResponse }> {
  const viewer = await registerUser(node);
  const socket = await authedSocket(node.wsUrl, viewer.access_token);
  await request(socket, 'presence.subscribe', { user_ids: userIds });
  return { socket, viewer };
}

describe('a node whose lease lapsed', () => {
  it('has its users ended by a survivor, which tells their subscribers and removes its records', async () => {
    const app = leased();
    const subject = await registerUser(app);
    const { socket, viewer } = await watch(app, [subject.user.id]);
    const deadId = await leaveDeadNode(app, [subject.user.id]);
    const offline = await socket.next(isStatus('offline'), 3000);
    expect(offline.d).toMatchObject({ user_id: subject.user.id, status: 'offline' });
    expect(typeof (offline.d as { last_seen_at: string }).last_seen_at).toBe('string');
    expect(await statusOf(app, viewer, subject.user.id)).toBe('offline');
    await expect.poll(() => app.kv.smembers(NODE_REGISTRY_KEY)).not.toContain(deadId);
    expect(await app.kv.smembers(nodeUsersKey(deadId))).toEqual([]);
    socket.close();
  });

  it('leaves online its user who still has a socket on a live node', async () => {
    const app = leased();
    const subject = await registerUser(app);
    const held = await authedSocket(app.wsUrl, subject.access_token);
    const { socket, viewer } = await watch(app, [subject.user.id]);
    const deadId = await leaveDeadNode(app, [subject.user.id]);
    await expect.poll(() => app.kv.smembers(NODE_REGISTRY_KEY), { timeout: 3000 }).not.toContain(deadId);
    expect(await statusOf(app, viewer, subject.user.id)).toBe('online');
    expect(socket.frames.filter(isStatus('offline'))).toEqual([]);
    socket.close();
    held.close();
  });

  it('is left to the survivor that claimed it, and taken over by another once that claim lapses', async () => {
    const app = leased();
    const subject = await registerUser(app);
    const { socket, viewer } = await watch(app, [subject.user.id]);
    const deadId = `dead-${randomUUID()}`;
    // Another survivor claimed the dead node and then died itself before finishing.
    await app.kv.set(nodeClaimKey(deadId), 'another-survivor', { ttlMs: 1500 });
    await leaveDeadNode(app, [subject.user.id], deadId);
    const claimedAt = Date.now();
    await socket.next(isStatus('offline'), 4000);
    expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(1000);
    expect(await statusOf(app, viewer, subject.user.id)).toBe('offline');
    socket.close();
  });
});

describe('a node lease', () => {
  it('lists the node and its connected users while it runs, and is given up on a clean shutdown', async () => {
    const cluster = await buildTestCluster(2, LEASE);
    try {
      const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
      const nodeId = a.modules.presence.nodeId;
      const subject = await registerUser(a);
      const { socket } = await watch(b, [subject.user.id]);
      await authedSocket(a.wsUrl, subject.access_token);
      await socket.next(isStatus('online'));
      expect(await b.kv.smembers(NODE_REGISTRY_KEY)).toContain(nodeId);
      expect(await b.kv.smembers(nodeUsersKey(nodeId))).toEqual([subject.user.id]);
      expect(await b.kv.get(nodeLeaseKey(nodeId))).not.toBeNull();

      await a.close();
      await socket.next(isStatus('offline'));
      expect(await b.kv.smembers(NODE_REGISTRY_KEY)).not.toContain(nodeId);
      expect(await b.kv.smembers(nodeUsersKey(nodeId))).toEqual([]);
      expect(await b.kv.get(nodeLeaseKey(nodeId))).toBeNull();
      socket.close();
    } finally {
      await cluster.close();
    }
  });

  it('registers again with its users when it finds its own lease lapsed and its records removed', async () => {
    const app = leased();
    const nodeId = app.modules.presence.nodeId;
    const subject = await registerUser(app);
    const held = await authedSocket(app.wsUrl, subject.access_token);
    const { socket, viewer } = await watch(app, [subject.user.id]);
    // What a survivor does to a node it believed dead, say after a long pause of this one.
    await app.kv.del(nodeLeaseKey(nodeId), nodeUsersKey(nodeId), presenceKey(subject.user.id));
    await app.kv.srem(NODE_REGISTRY_KEY, nodeId);
    await expect.poll(() => app.kv.smembers(NODE_REGISTRY_KEY)).toContain(nodeId);
    await expect
      .poll(async () => (await app.kv.smembers(nodeUsersKey(nodeId))).sort())
      .toEqual([subject.user.id, viewer.user.id].sort());
    const online = await socket.next(isStatus('online'), 3000);
    expect(online.d).toMatchObject({ user_id: subject.user.id });
    socket.close();
    held.close();
  });
});
