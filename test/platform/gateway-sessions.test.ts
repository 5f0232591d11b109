import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import type { AuthUser } from '../../src/platform/auth/access-tokens.js';
import { servicePrincipal, userPrincipal } from '../../src/platform/auth/principal.js';
import { EventBus, userTopic } from '../../src/platform/bus.js';
import { DEPARTURES_IN_FLIGHT, Sessions } from '../../src/platform/gateway/sessions.js';
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

  describe('when more sockets close at once than departures run', () => {
    /** Fills every departure's place with users whose listener holds until `release`. */
    const holdDepartures = async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const holding = new Set(Array.from({ length: DEPARTURES_IN_FLIGHT }, (_, i) => `held-${i}`));
      sessions.onSession({ disconnected: (userId) => (holding.has(userId) ? held : undefined) });
      const connections = [];
      for (const id of holding) {
        const client = fakeConnection();
        await sessions.authenticate(client.connection, userPrincipal({ ...alice, id }));
        connections.push(client.connection);
      }
      for (const connection of connections) sessions.closed(connection);
      await vi.waitFor(() =>
        expect(listened.filter((l) => l.startsWith('disconnected held-'))).toHaveLength(DEPARTURES_IN_FLIGHT),
      );
      return release;
    };

    it("tells the listeners of a user's departure once one before it ended", async () => {
      const release = await holdDepartures();
      const client = fakeConnection();
      await sessions.authenticate(client.connection, userPrincipal(alice));
      sessions.closed(client.connection);
      expect(sessions.localUserIds()).not.toContain('alice');
      await Promise.resolve();
      expect(listened).not.toContain('disconnected alice last=true');
      release();
      await vi.waitFor(() => expect(listened).toContain('disconnected alice last=true'));
    });

    it('does not tell the listeners a user left when they connected here again before their turn', async () => {
      const release = await holdDepartures();
      const before = fakeConnection();
      await sessions.authenticate(before.connection, userPrincipal(alice));
      sessions.closed(before.connection);
      const after = fakeConnection();
      await sessions.authenticate(after.connection, userPrincipal(alice));
      release();
      // A later departure of another user ran, so alice's turn came before it.
      const other = fakeConnection();
      await sessions.authenticate(other.connection, userPrincipal({ ...alice, id: 'bob' }));
      sessions.closed(other.connection);
      await vi.waitFor(() => expect(listened).toContain('disconnected bob last=true'));
      expect(listened.filter((l) => l.includes(' alice '))).toEqual([
        'connected alice first=true',
        'connected alice first=true',
      ]);
      expect(sessions.localUserIds()).toContain('alice');
    });

    it('starts the waiting departures at once when the gateway stops', async () => {
      await holdDepartures();
      const client = fakeConnection();
      await sessions.authenticate(client.connection, userPrincipal(alice));
      sessions.closed(client.connection);
      sessions.stop();
      await vi.waitFor(() => expect(listened).toContain('disconnected alice last=true'));
    });
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
