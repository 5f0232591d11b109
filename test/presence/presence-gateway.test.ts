import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presenceKey } from '../../src/modules/presence/presence.service.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import {
  buildTestApp,
  buildTestCluster,
  type TestApp,
  type TestCluster,
  useTestApp,
} from '../helpers/app.js';
import { authedSocket, openedSockets, request, TestSocket } from '../helpers/ws-client.js';

const lookupOver = async (app: { http: TestApp['http'] }, token: string, id: string) => {
  const response = await app.http.inject({
    method: 'POST',
    url: '/api/presence/presence',
    headers: bearer(token),
    payload: { user_ids: [id] },
  });
  return (response.json() as { presence: Record<string, string> }).presence[id];
};

// One app and one two-node cluster with the default settings for every test that needs no other:
// each test makes its own users.
const app = useTestApp();
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await buildTestCluster(2);
});
afterAll(async () => {
  await cluster?.close();
});

describe('presence on the gateway', () => {
  const { open, closeAll } = openedSockets(() => app().wsUrl);

  afterAll(async () => {
    closeAll();
  });

  it('refuses presence frames before authentication', async () => {
    const socket = await open();
    const reply = await request(socket, 'presence.heartbeat');
    expect(reply).toMatchObject({ t: 'error', code: 'UNAUTHENTICATED' });
  });

  it('answers a heartbeat frame like the REST heartbeat', async () => {
    const user = await registerUser(app());
    const socket = await open(user.access_token);
    const reply = await request(socket, 'presence.heartbeat');
    expect(reply).toMatchObject({ t: 'ack', d: { status: 'online', ttl_seconds: 60 } });
  });

  it('answers the heartbeat of a user whose socket is on this node from the node alone, recording the sighting', async () => {
    const user = await registerUser(app());
    const socket = await open(user.access_token);
    const connectedAt = await app().kv.get(presenceKey(user.user.id));
    expect(connectedAt).not.toBeNull();
    const overSocket = await request(socket, 'presence.heartbeat');
    const overRest = await app().http.inject({
      method: 'POST',
      url: '/api/presence/heartbeat',
      headers: bearer(user.access_token),
    });
    expect(overSocket).toMatchObject({ t: 'ack', d: { status: 'online' } });
    expect(overRest.json()).toMatchObject({ status: 'online' });
    // The socket keeps the key alive: neither heartbeat rewrote it.
    expect(await app().kv.get(presenceKey(user.user.id))).toBe(connectedAt);
    const me = await app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: bearer(user.access_token),
    });
    expect(me.json().last_seen_at).toBe(overRest.json().last_seen_at);
  });

  it('counts an authenticated socket as heartbeating, and its closing as going offline', async () => {
    const user = await registerUser(app());
    const viewer = await registerUser(app());
    const socket = await open(user.access_token);
    expect(await lookupOver(app(), viewer.access_token, user.user.id)).toBe('online');
    socket.close();
    await socket.closed;
    await expect.poll(() => lookupOver(app(), viewer.access_token, user.user.id)).toBe('offline');
  });

  it('pushes presence changes to a subscriber: online, a new status message, then offline', async () => {
    const watcher = await registerUser(app());
    const friend = await registerUser(app());
    const socket = await open(watcher.access_token);
    const ack = await request(socket, 'presence.subscribe', { user_ids: [friend.user.id] });
    expect(ack).toMatchObject({ t: 'ack', d: { presence: { [friend.user.id]: 'offline' } } });

    const friendSocket = await open(friend.access_token);
    const online = await socket.next(
      (f) => f.t === 'presence' && (f.d as { status: string }).status === 'online',
    );
    expect(online.d).toMatchObject({ user_id: friend.user.id, status: 'online', status_message: null });

    await request(friendSocket, 'presence.status', { status_message: ' in the lobby ' });
    const status = await socket.next(
      (f) => f.t === 'presence' && (f.d as { status_message: string }).status_message !== null,
    );
    expect(status.d).toMatchObject({
      user_id: friend.user.id,
      status: 'online',
      status_message: 'in the lobby',
    });

    friendSocket.close();
    const offline = await socket.next(
      (f) => f.t === 'presence' && (f.d as { status: string }).status === 'offline',
    );
    expect(offline.d).toMatchObject({ user_id: friend.user.id, status: 'offline' });
    expect(typeof (offline.d as { last_seen_at: string }).last_seen_at).toBe('string');
  });

  it('stops delivering to a subscriber once the subject hides presence, and resumes when shown again', async () => {
    const watcher = await registerUser(app());
    const subject = await registerUser(app());
    const socket = await open(watcher.access_token);
    await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] });
    const privacy = (visibility: string) =>
      app().http.inject({
        method: 'PUT',
        url: '/api/profile/me',
        headers: bearer(subject.access_token),
        payload: { privacy: { presence_visibility: visibility } },
      });
    const status = (message: string) =>
      app().http.inject({
        method: 'PUT',
        url: '/api/presence/status',
        headers: bearer(subject.access_token),
        payload: { status_message: message },
      });
    await privacy('nobody');
    await status('secret');
    await privacy('everyone');
    await status('public again');
    const event = await socket.next((f) => f.t === 'presence');
    expect(event.d).toMatchObject({ status_message: 'public again' });
    expect(socket.frames.filter((f) => f.t === 'presence')).toEqual([]);
  });

  it('does not subscribe to a user who hides presence, and reports them offline', async () => {
    const watcher = await registerUser(app());
    const hidden = await registerUser(app());
    await app().http.inject({
      method: 'PUT',
      url: '/api/profile/me',
      headers: bearer(hidden.access_token),
      payload: { privacy: { presence_visibility: 'nobody' } },
    });
    const hiddenSocket = await open(hidden.access_token);
    const socket = await open(watcher.access_token);
    const ack = await request(socket, 'presence.subscribe', { user_ids: [hidden.user.id] });
    expect(ack.d).toEqual({ presence: { [hidden.user.id]: 'offline' } });
    await request(hiddenSocket, 'presence.status', { status_message: 'invisible' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(socket.frames.filter((f) => f.t === 'presence')).toEqual([]);
  });

  it('stops delivering after unsubscribe', async () => {
    const watcher = await registerUser(app());
    const subject = await registerUser(app());
    const socket = await open(watcher.access_token);
    await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] });
    expect(await request(socket, 'presence.unsubscribe', { user_ids: [subject.user.id] })).toMatchObject({
      t: 'ack',
    });
    await open(subject.access_token);
    // A second watcher still subscribed proves the event was published at all.
    const other = await open((await registerUser(app())).access_token);
    await request(other, 'presence.subscribe', { user_ids: [subject.user.id] });
    await request(await open(subject.access_token), 'presence.status', { status_message: 'hello' });
    await other.next((f) => f.t === 'presence');
    expect(socket.frames.filter((f) => f.t === 'presence')).toEqual([]);
  });

  it('answers a query frame with the same statuses as the REST lookup', async () => {
    const viewer = await registerUser(app());
    const subject = await registerUser(app());
    await app().http.inject({
      method: 'POST',
      url: '/api/presence/heartbeat',
      headers: bearer(subject.access_token),
    });
    const socket = await open(viewer.access_token);
    const reply = await request(socket, 'presence.query', { user_ids: [subject.user.id, 'nope'] });
    expect(reply.d).toEqual({ presence: { [subject.user.id]: 'online', nope: 'unknown' } });
  });

  it.each([
    ['presence.subscribe', { user_ids: [] }],
    ['presence.query', { user_ids: 'x' }],
    ['presence.status', { status_message: 5 }],
    ['presence.status', { status_message: 'x'.repeat(141) }],
    ['presence.heartbeat', { extra: true }],
  ])('answers a %s frame with a bad payload with VALIDATION_FAILED', async (type, payload) => {
    const socket = await open((await registerUser(app())).access_token);
    expect(await request(socket, type, payload)).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
  });
});

describe('gateway limits', () => {
  it('closes a connection that does not authenticate within the deadline with 4401', async () => {
    const app = await buildTestApp({ WS_AUTH_TIMEOUT_MS: 300 });
    try {
      const idle = await TestSocket.connect(app.wsUrl);
      const user = await registerUser(app);
      const authed = await authedSocket(app.wsUrl, user.access_token);
      expect((await idle.closed).code).toBe(4401);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await request(authed, 'presence.heartbeat')).t).toBe('ack');
    } finally {
      await app.close();
    }
  });

  it('refuses frames over the per-second allowance with RATE_LIMITED, and closes a flood with 4429', async () => {
    const app = await buildTestApp({ WS_MAX_FRAMES_PER_SECOND: 5 });
    try {
      const polite = await TestSocket.connect(app.wsUrl);
      for (let i = 0; i < 8; i++) polite.sendFrame({ t: 'ping', id: i });
      const limited = await polite.next((f) => f.t === 'error');
      expect(limited).toMatchObject({ code: 'RATE_LIMITED' });
      expect(limited.retry_after).toBeGreaterThanOrEqual(1);
      expect(polite.frames.filter((f) => f.t === 'pong').length).toBeLessThanOrEqual(5);

      const flooder = await TestSocket.connect(app.wsUrl);
      for (let i = 0; i < 40; i++) flooder.sendFrame({ t: 'ping', id: i });
      expect((await flooder.closed).code).toBe(4429);
    } finally {
      await app.close();
    }
  });

  it('refuses a subscription beyond the limit and subscribes none of the batch', async () => {
    const app = await buildTestApp({ WS_MAX_SUBSCRIPTIONS: 2 });
    try {
      const viewer = await registerUser(app);
      const [a, b, c] = (await Promise.all([1, 2, 3].map(() => registerUser(app)))).map((r) => r.user.id);
      const socket = await authedSocket(app.wsUrl, viewer.access_token);
      const over = await request(socket, 'presence.subscribe', {
        user_ids: [a, b, c],
      });
      expect(over).toMatchObject({ t: 'error', code: 'SUBSCRIPTION_LIMIT' });
      const fits = await request(socket, 'presence.subscribe', { user_ids: [a, b] });
      expect(fits.t).toBe('ack');
    } finally {
      await app.close();
    }
  });

  it('disconnects a client that stops reading with 4408 instead of buffering without bound', async () => {
    const app = await buildTestApp({ WS_MAX_BUFFERED_BYTES: 64 * 1024, WS_MAX_FRAMES_PER_SECOND: 100_000 });
    try {
      const user = await registerUser(app);
      const socket = await authedSocket(app.wsUrl, user.access_token);
      // Stop reading: the kernel buffers fill, then the server's own send buffer grows.
      (socket.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const ids = Array.from(
        { length: 200 },
        (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      );
      for (let i = 0; i < 1500; i++) socket.sendFrame({ t: 'presence.query', id: i, d: { user_ids: ids } });
      await expect.poll(() => app.gateway.connectionCount, { timeout: 20_000 }).toBe(0);
      const metrics = await app.http.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.body).toMatch(/atrium_ws_closed_by_server_total\{reason="slow_consumer"\} 1/);
    } finally {
      await app.close();
    }
  });
});

describe('presence across two instances sharing one KV store', () => {
  it('shows a heartbeat made on one instance to a lookup on the other', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const user = await registerUser(a);
    const viewer = await registerUser(b);
    await a.http.inject({
      method: 'POST',
      url: '/api/presence/heartbeat',
      headers: bearer(user.access_token),
    });
    expect(await lookupOver(b, viewer.access_token, user.user.id)).toBe('online');
  });

  it('delivers a presence event published on one instance to a socket on the other', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const subject = await registerUser(a);
    const watcher = await registerUser(b);
    const socket = await authedSocket(b.wsUrl, watcher.access_token);
    try {
      await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] });
      await a.http.inject({
        method: 'POST',
        url: '/api/presence/heartbeat',
        headers: bearer(subject.access_token),
      });
      const event = await socket.next((f) => f.t === 'presence');
      expect(event.d).toMatchObject({ user_id: subject.user.id, status: 'online' });
    } finally {
      socket.close();
    }
  });
});

describe('socket sessions', () => {
  it('closes a socket with 4403 when its session logs out, on every node', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const user = await registerUser(a);
    const other = await registerUser(a);
    const onA = await authedSocket(a.wsUrl, user.access_token);
    const onB = await authedSocket(b.wsUrl, user.access_token);
    const unrelated = await authedSocket(b.wsUrl, other.access_token);
    await a.http.inject({
      method: 'POST',
      url: '/api/auth/logout',
      payload: { refresh_token: user.refresh_token },
    });
    expect((await onA.closed).code).toBe(4403);
    expect((await onB.closed).code).toBe(4403);
    expect((await request(unrelated, 'presence.heartbeat')).t).toBe('ack');
    unrelated.close();
  });

  it('closes a socket with 4403 when its access token expires, unless a fresh auth frame came first', async () => {
    // Two seconds of slack between the refresh and the first token's expiry, so a loaded machine
    // cannot delay the fresh auth frame past it.
    const app = await buildTestApp({ ACCESS_TOKEN_TTL_SECONDS: 4 });
    try {
      const first = await registerUser(app);
      const second = await registerUser(app);
      const expiring = await authedSocket(app.wsUrl, first.access_token);
      const renewed = await authedSocket(app.wsUrl, second.access_token);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const refreshed = await app.http.inject({
        method: 'POST',
        url: '/api/auth/refresh',
        payload: { refresh_token: second.refresh_token },
      });
      const fresh = (refreshed.json() as { access_token: string }).access_token;
      expect((await request(renewed, 'auth', { token: fresh })).t).toBe('ack');
      expect((await expiring.closed).code).toBe(4403);
      expect((await request(renewed, 'presence.heartbeat')).t).toBe('ack');
      renewed.close();
    } finally {
      await app.close();
    }
  });

  it('drops the subscriptions of the previous user when a socket authenticates as someone else', async () => {
    const first = await registerUser(app());
    const second = await registerUser(app());
    const subject = await registerUser(app());
    const socket = await authedSocket(app().wsUrl, first.access_token);
    await request(socket, 'presence.subscribe', { user_ids: [subject.user.id] });
    expect((await request(socket, 'auth', { token: second.access_token })).t).toBe('ack');
    const watcher = await authedSocket(app().wsUrl, first.access_token);
    await request(watcher, 'presence.subscribe', { user_ids: [subject.user.id] });
    await app().http.inject({
      method: 'POST',
      url: '/api/presence/heartbeat',
      headers: bearer(subject.access_token),
    });
    await watcher.next((f) => f.t === 'presence');
    expect(socket.frames.filter((f) => f.t === 'presence')).toEqual([]);
    socket.close();
    watcher.close();
  });
});

describe('presence events from lapses and other nodes', () => {
  it('announces a lapsed REST heartbeat as offline with the time the user was last seen', async () => {
    const app = await buildTestApp({ PRESENCE_TTL_SECONDS: 1 });
    try {
      const subject = await registerUser(app);
      const watcher = await authedSocket(app.wsUrl, (await registerUser(app)).access_token);
      await request(watcher, 'presence.subscribe', { user_ids: [subject.user.id] });
      const beat = await app.http.inject({
        method: 'POST',
        url: '/api/presence/heartbeat',
        headers: bearer(subject.access_token),
      });
      const lastSeen = (beat.json() as { last_seen_at: string }).last_seen_at;
      await watcher.next((f) => f.t === 'presence' && (f.d as { status: string }).status === 'online');
      const offline = await watcher.next(
        (f) => f.t === 'presence' && (f.d as { status: string }).status === 'offline',
        4000,
      );
      expect(offline.d).toMatchObject({ user_id: subject.user.id, last_seen_at: lastSeen });
      watcher.close();
    } finally {
      await app.close();
    }
  });

  it('announces online again when a node still holding the user restores a presence another node ended', async () => {
    const cluster = await buildTestCluster(2, { PRESENCE_TTL_SECONDS: 3 });
    try {
      const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
      const subject = await registerUser(a);
      const watcher = await authedSocket(a.wsUrl, (await registerUser(a)).access_token);
      await request(watcher, 'presence.subscribe', { user_ids: [subject.user.id] });
      const onA = await authedSocket(a.wsUrl, subject.access_token);
      const onB = await authedSocket(b.wsUrl, subject.access_token);
      await watcher.next((f) => f.t === 'presence' && (f.d as { status: string }).status === 'online');
      onA.close();
      await watcher.next((f) => f.t === 'presence' && (f.d as { status: string }).status === 'offline');
      const back = await watcher.next(
        (f) => f.t === 'presence' && (f.d as { status: string }).status === 'online',
        4000,
      );
      expect(back.d).toMatchObject({ user_id: subject.user.id });
      onB.close();
      watcher.close();
    } finally {
      await cluster.close();
    }
  });
});
