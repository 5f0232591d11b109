import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import type { AuthUser } from '../../src/platform/auth/access-tokens.js';
import { servicePrincipal, userPrincipal } from '../../src/platform/auth/principal.js';
import { EventBus, userTopic } from '../../src/platform/bus.js';
import { Sessions } from '../../src/platform/gateway/sessions.js';
import { Subscriptions } from '../../src/platform/gateway/subscriptions.js';
import { MemoryKv } from '../../src/platform/kv/index.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';
import { fakeConnection } from '../helpers/fake-connection.js';

const AUTH_TIMEOUT_MS = 1_000;
const start = Date.parse('2026-11-21T12:00:00.000Z');
const alice: AuthUser = { id: 'alice', sessionId: 'sa', roles: [] };

/** Who each connection speaks for, on its own: no socket, the in-process KV store. */
describe('Sessions', () => {
  let kv: MemoryKv;
  let sessions: Sessions;
  let listened: string[];

  beforeEach(() => {
    // Before anything is built: the token expiry queue reads the clock it found at construction.
    vi.useFakeTimers({ now: start, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    kv = new MemoryKv();
    const log = createLogger({ LOG_LEVEL: 'silent' });
    const bus = new EventBus(kv, { maxLen: 100, ttlMs: 60_000 });
    const subscriptions = new Subscriptions({
      bus,
      log,
      maxSubscriptions: 10,
      maxBufferedBytes: 1024 * 1024,
    });
    sessions = new Sessions({
      log,
      metrics: createMetrics(),
      kv,
      subscriptions,
      maxSocketsPerUser: 5,
      authTimeoutMs: AUTH_TIMEOUT_MS,
    });
    listened = [];
    sessions.onSession({
      connected: (user, first) => void listened.push(`connected ${user.id} first=${first}`),
      disconnected: (userId, last) => void listened.push(`disconnected ${userId} last=${last}`),
    });
  });

  afterEach(async () => {
    sessions.stop();
    vi.useRealTimers();
    await kv.close();
  });

  it('closes a connection that sends no auth frame within the deadline with 4401, and no other', async () => {
    const silent = fakeConnection();
    const signedIn = fakeConnection();
    sessions.opened(silent.connection);
    sessions.opened(signedIn.connection);
    await sessions.authenticate(signedIn.connection, userPrincipal(alice));
    vi.advanceTimersByTime(AUTH_TIMEOUT_MS);
    expect(silent.closedWith?.code).toBe(CloseCode.AUTH_TIMEOUT);
    expect(signedIn.closedWith).toBeUndefined();
  });

  it("closes a user's connection with 4403 when the access token expires, unless a fresh one came first", async () => {
    const client = fakeConnection();
    await sessions.authenticate(client.connection, userPrincipal({ ...alice, expiresAt: start + 2_000 }));
    await sessions.authenticate(client.connection, userPrincipal({ ...alice, expiresAt: start + 5_000 }));
    vi.advanceTimersByTime(2_000);
    expect(client.closedWith).toBeUndefined();
    vi.advanceTimersByTime(3_000);
    expect(client.closedWith).toEqual({ code: CloseCode.SESSION_ENDED, reason: 'access token expired' });
  });

  it("gives a user's connection their own topic and tells the listeners of their first and last socket here", async () => {
    const first = fakeConnection();
    const second = fakeConnection();
    await sessions.authenticate(first.connection, userPrincipal(alice));
    await sessions.authenticate(second.connection, userPrincipal(alice));
    expect([...(first.connection.topics ?? [])]).toEqual([userTopic('alice')]);
    expect(sessions.localUserIds()).toEqual(['alice']);
    sessions.closed(first.connection);
    sessions.closed(second.connection);
    await vi.waitFor(() => expect(listened).toHaveLength(4));
    expect(listened).toEqual([
      'connected alice first=true',
      'connected alice first=false',
      'disconnected alice last=false',
      'disconnected alice last=true',
    ]);
    expect(sessions.localUserIds()).toEqual([]);
  });

  it("drops a user's topics, token expiry and presence here when the connection switches to a service", async () => {
    const client = fakeConnection();
    await sessions.authenticate(client.connection, userPrincipal({ ...alice, expiresAt: start + 1_000 }));
    await sessions.authenticate(client.connection, servicePrincipal({ id: 'gs1', scope: 'w1' }));
    expect(client.connection.topics).toBeUndefined();
    expect(sessions.localUserIds()).toEqual([]);
    await vi.waitFor(() => expect(listened).toContain('disconnected alice last=true'));
    vi.advanceTimersByTime(10_000);
    expect(client.closedWith).toBeUndefined();
  });

  it("refuses a user's socket over the per-user limit with QUOTA_EXCEEDED", async () => {
    for (let i = 0; i < 5; i++)
      await sessions.authenticate(fakeConnection().connection, userPrincipal(alice));
    const extra = fakeConnection();
    await expect(sessions.authenticate(extra.connection, userPrincipal(alice))).rejects.toMatchObject({
      code: 'QUOTA_EXCEEDED',
    });
    expect(extra.connection.principal).toBeUndefined();
  });
});
