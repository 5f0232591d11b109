import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { registerUser } from '../test/helpers/accounts.js';
import { buildTestApp, type TestApp } from '../test/helpers/app.js';
import { hasRedisServer, RedisServer } from '../test/helpers/redis-server.js';
import { rejectionOf } from '../test/helpers/rejections.js';
import { TcpProxy } from '../test/helpers/tcp-proxy.js';
import { AtriumClient, type AtriumClientOptions, type ConnectionState, type FetchLike } from './client.js';
import type { PresenceEvent } from './frames.js';

/** Resolves once `client` is in `state` (now or later); the timer only keeps a broken test from hanging. */
function untilState(client: AtriumClient, state: ConnectionState): Promise<void> {
  if (client.state === state) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`never reached ${state}; now ${client.state}`)), 10_000);
    const off = client.onStateChange((now) => {
      if (now !== state) return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

/** The global fetch, recording `METHOD url` of each request, so a test can tell which transport served a call. */
function countingFetch() {
  const requests: string[] = [];
  const fetch: FetchLike = (url, init) => {
    requests.push(`${init.method} ${url}`);
    return globalThis.fetch(url, init);
  };
  return { fetch, requests };
}

/** A fetch answering every request with `status` and a JSON body (or a body that is not JSON). */
function stubFetch(status: number, body: unknown, headers: Record<string, string> = {}) {
  const requests: { url: string; init: Parameters<FetchLike>[1] }[] = [];
  const fetch: FetchLike = async (url, init) => {
    requests.push({ url, init });
    return {
      status,
      headers: { get: (name) => headers[name.toLowerCase()] ?? null },
      json: async () => (body === undefined ? JSON.parse('<html>') : body),
    };
  };
  return { fetch, requests };
}

describe('AtriumClient against a real server', () => {
  let app: TestApp;
  let proxy: TcpProxy;
  let proxiedWsUrl: string;
  const clients: AtriumClient[] = [];

  const client = (options: Partial<AtriumClientOptions> = {}) => {
    const created = new AtriumClient({
      httpUrl: app.httpUrl,
      wsUrl: app.wsUrl,
      WebSocket,
      reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
      ...options,
    });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    // A short history and a loose DM limit, so a test can send more events than it keeps.
    app = await buildTestApp({ EVENT_HISTORY_SIZE: 20, DM_RATE_LIMIT_COUNT: 1000 });
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(app.wsUrl).port) });
    proxiedWsUrl = `ws://127.0.0.1:${proxy.port}/ws`;
  });

  afterAll(async () => {
    for (const created of clients) created.close();
    await proxy?.close();
    await app?.close();
  });

  it('answers presence.query with equal results over the socket and over REST', async () => {
    const a = await registerUser(app);
    const overSocket = countingFetch();
    const overRest = countingFetch();
    const socketClient = client({ accessToken: a.access_token, fetch: overSocket.fetch });
    const restClient = client({ accessToken: a.access_token, fetch: overRest.fetch, wsUrl: undefined });
    await socketClient.ready();
    const input = { user_ids: [a.user.id, 'nobody'] };

    const viaSocket = await socketClient.call('presence.query', input);
    const viaRest = await restClient.call('presence.query', input);
    expect(viaSocket).toEqual({ presence: { [a.user.id]: 'online', nobody: 'unknown' } });
    expect(viaRest).toEqual(viaSocket);
    expect(overSocket.requests).toEqual([]);
    expect(overRest.requests).toEqual([`POST ${app.httpUrl}/api/presence/presence`]);
  });

  it('refuses a bad presence.query with VALIDATION_FAILED and the field over both transports', async () => {
    const a = await registerUser(app);
    const socketClient = client({ accessToken: a.access_token });
    const restClient = client({ accessToken: a.access_token, wsUrl: undefined });
    await socketClient.ready();
    for (const caller of [socketClient, restClient]) {
      const error = await rejectionOf(caller.call('presence.query', { user_ids: [] }));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.errors).toEqual([expect.objectContaining({ path: expect.stringMatching(/\.user_ids$/) })]);
    }
  });

  it('refuses calls without an access token with UNAUTHENTICATED, over REST and for socket-only operations', async () => {
    const anonymous = client();
    expect(anonymous.state).toBe('offline');
    expect((await rejectionOf(anonymous.call('users.me'))).code).toBe('UNAUTHENTICATED');
    expect((await rejectionOf(anonymous.call('presence.query', { user_ids: ['x'] }))).code).toBe(
      'UNAUTHENTICATED',
    );
    expect((await rejectionOf(anonymous.call('presence.subscribe', { user_ids: ['x'] }))).code).toBe(
      'UNAUTHENTICATED',
    );
  });

  it('goes offline on a refused token, answers UNAUTHENTICATED on both transports, and reconnects with a new token', async () => {
    const a = await registerUser(app);
    const refused = client({ accessToken: 'not.a.token' });
    const causes: (string | undefined)[] = [];
    refused.onStateChange((state, cause) => causes.push(`${state} ${cause?.code ?? ''}`.trim()));
    await untilState(refused, 'offline');
    expect(causes).toEqual(['authenticating', 'offline UNAUTHENTICATED']);
    expect((await rejectionOf(refused.call('presence.query', { user_ids: ['x'] }))).code).toBe(
      'UNAUTHENTICATED',
    );
    expect((await rejectionOf(refused.call('presence.subscribe', { user_ids: ['x'] }))).code).toBe(
      'UNAUTHENTICATED',
    );

    await expect(refused.call('auth', { token: a.access_token })).resolves.toMatchObject({
      user_id: a.user.id,
      roles: ['user'],
    });
    expect(refused.state).toBe('ready');
    expect((await rejectionOf(refused.call('auth', { token: 'still.not.a.token' }))).code).toBe(
      'UNAUTHENTICATED',
    );
    expect((await rejectionOf(refused.call('auth', { token: '' }))).code).toBe('VALIDATION_FAILED');
    expect(refused.state).toBe('offline');
  });

  it('routes calls through REST while the socket is down, then reconnects, re-authenticates and uses the socket again', async () => {
    const a = await registerUser(app);
    const counted = countingFetch();
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token, fetch: counted.fetch });
    await watcher.ready();
    const states: ConnectionState[] = [];
    watcher.onStateChange((state) => states.push(state));

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    await expect(watcher.call('presence.status', { status_message: ' away ' })).resolves.toEqual({
      status_message: 'away',
    });
    expect(counted.requests).toEqual([`PUT ${app.httpUrl}/api/presence/status`]);

    await proxy.setMode('forward');
    await expect(watcher.ready()).resolves.toMatchObject({ user_id: a.user.id, roles: ['user'] });
    expect(states.slice(0, 2)).toEqual(['reconnecting', 'connecting']);
    expect(states.slice(-3)).toEqual(['connecting', 'authenticating', 'ready']);
    await expect(watcher.call('presence.status', { status_message: 'back' })).resolves.toEqual({
      status_message: 'back',
    });
    expect(counted.requests).toHaveLength(1);
  });

  it('keeps event handlers across a reconnect, where the app re-subscribes on ready', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const subject = client({ accessToken: b.access_token, wsUrl: undefined });
    let subscribed: Promise<unknown> = Promise.resolve();
    watcher.onStateChange((state) => {
      if (state === 'ready') subscribed = watcher.call('presence.subscribe', { user_ids: [b.user.id] });
    });
    const events: PresenceEvent[] = [];
    watcher.on('presence', (event) => events.push(event));
    await watcher.ready();
    await subscribed;

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    await proxy.setMode('forward');
    await watcher.ready();
    await expect(subscribed).resolves.toEqual({ presence: { [b.user.id]: 'offline' } });

    const heard = new Promise<PresenceEvent>((resolve) =>
      watcher.on('presence', (event) => event.status_message === 'hello' && resolve(event)),
    );
    await subject.call('presence.status', { status_message: 'hello' });
    expect(await heard).toEqual({ user_id: b.user.id, status: 'offline', status_message: 'hello' });
    expect(events).toContainEqual(await heard);
    // Closed here: later tests cut the proxy, and a subscribe on its next ready would fail unawaited.
    watcher.close();
  });

  it('after a reconnect, hands the events missed meanwhile to the on handlers in order, before ready', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const sender = client({ accessToken: b.access_token, wsUrl: undefined });
    const heard: string[] = [];
    let missedReported = 0;
    watcher.on('dm.message', (message) => heard.push(`${watcher.state}: ${message.body}`));
    watcher.onMissedEvents(() => missedReported++);
    await watcher.ready();
    await sender.call('dm.send', { user_id: a.user.id, body: 'live' });
    await expect.poll(() => heard).toEqual(['ready: live']);

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    for (const body of ['m1', 'm2', 'm3']) await sender.call('dm.send', { user_id: a.user.id, body });
    await proxy.setMode('forward');
    await expect(watcher.ready()).resolves.toMatchObject({ recovered: true });
    expect(heard).toEqual(['ready: live', 'authenticating: m1', 'authenticating: m2', 'authenticating: m3']);
    expect(missedReported).toBe(0);
  });

  it('recovers the messages of a chat missed meanwhile when the app joins it again on ready', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const sender = client({ accessToken: b.access_token, wsUrl: undefined });
    const world = await sender.call('worlds.create', { name: 'Rejoined', visibility: 'public' });
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const heard: string[] = [];
    const missed: unknown[] = [];
    let joined: Promise<unknown> = Promise.resolve();
    watcher.onStateChange((state) => {
      if (state === 'ready') joined = watcher.call('chat.join', { world_id: world.id });
    });
    watcher.on('chat.message', (message) => heard.push(message.body));
    watcher.onMissedEvents((what) => missed.push(what));
    await watcher.ready();
    await joined;
    await sender.call('chat.sendToWorld', { world_id: world.id, body: 'live' });
    await expect.poll(() => heard).toEqual(['live']);

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    for (const body of ['m1', 'm2']) await sender.call('chat.sendToWorld', { world_id: world.id, body });
    await proxy.setMode('forward');
    await watcher.ready();
    await expect(joined).resolves.toMatchObject({ world_id: world.id, recovered: true });
    expect(heard).toEqual(['live', 'm1', 'm2']);
    expect(missed).toEqual([]);
    // Closed here: later tests cut the proxy, and a join on its next ready would fail unawaited.
    watcher.close();
  });

  it('reports a chat whose missed messages are no longer all kept through onMissedEvents, naming it', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const sender = client({ accessToken: b.access_token, wsUrl: undefined });
    const world = await sender.call('worlds.create', { name: 'Too far behind', visibility: 'public' });
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const missed: unknown[] = [];
    watcher.onMissedEvents((what) => missed.push(what));
    await watcher.ready();
    await watcher.call('chat.join', { world_id: world.id });
    await sender.call('chat.sendToWorld', { world_id: world.id, body: 'seen' });
    await expect.poll(() => watcher.call('ping').then(() => missed.length)).toBe(0);

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    for (let i = 0; i < 21; i++) await sender.call('chat.sendToWorld', { world_id: world.id, body: `m${i}` });
    await proxy.setMode('forward');
    await watcher.ready();
    await expect(watcher.call('chat.join', { world_id: world.id })).resolves.toMatchObject({
      recovered: false,
    });
    expect(missed).toEqual([{ stream: 'chat', world_id: world.id, room_id: null }]);
  });

  it('reports through onMissedEvents when the server no longer holds every missed event', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const watcher = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const sender = client({ accessToken: b.access_token, wsUrl: undefined });
    const heard: string[] = [];
    const missedReported: unknown[] = [];
    watcher.on('dm.message', (message) => heard.push(message.body));
    watcher.onMissedEvents((what) => missedReported.push(what));
    await watcher.ready();

    await proxy.setMode('refuse');
    await untilState(watcher, 'reconnecting');
    for (let i = 0; i < 21; i++) await sender.call('dm.send', { user_id: a.user.id, body: `m${i}` });
    await proxy.setMode('forward');
    await expect(watcher.ready()).resolves.toMatchObject({ recovered: false });
    expect(missedReported).toEqual([{ stream: 'user' }]);
    expect(heard).toEqual([]);
  });

  it('makes socket-only calls wait for the reconnect, and fails them with CLOSED when it does not come in time', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const patient = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    const impatient = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token, requestTimeoutMs: 300 });
    await Promise.all([patient.ready(), impatient.ready(10_000)]);

    await proxy.setMode('refuse');
    await Promise.all([untilState(patient, 'reconnecting'), untilState(impatient, 'reconnecting')]);
    const error = await rejectionOf(impatient.call('presence.subscribe', { user_ids: [b.user.id] }));
    expect(error.code).toBe('CLOSED');
    expect(error.message).toContain('not ready');

    const waiting = patient.call('presence.subscribe', { user_ids: [b.user.id] });
    await proxy.setMode('forward');
    await expect(waiting).resolves.toEqual({ presence: { [b.user.id]: 'offline' } });
  });

  it('serves ping over the socket, and fails it with CLOSED on a client without a socket', async () => {
    const a = await registerUser(app);
    const socketClient = client({ accessToken: a.access_token });
    await expect(socketClient.call('ping')).resolves.toEqual({ ts: expect.any(Number) });
    const restClient = client({ accessToken: a.access_token, wsUrl: undefined });
    expect((await rejectionOf(restClient.call('ping'))).code).toBe('CLOSED');
  });

  it('re-authenticates the open socket when the access token changes', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const switching = client({ accessToken: a.access_token });
    await expect(switching.ready()).resolves.toMatchObject({ user_id: a.user.id });
    const states: ConnectionState[] = [];
    switching.onStateChange((state) => states.push(state));
    switching.setAccessToken(b.access_token);
    expect(switching.state).toBe('authenticating');
    await expect(switching.ready()).resolves.toMatchObject({ user_id: b.user.id });
    expect(states).toEqual(['authenticating', 'ready']);
    await expect(switching.call('users.me')).resolves.toMatchObject({ id: b.user.id });

    switching.setAccessToken(null);
    expect(switching.state).toBe('offline');
  });

  it('keeps delivering events to the other handlers when one throws', async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const watcher = client({ accessToken: a.access_token });
    await watcher.ready();
    await watcher.call('presence.subscribe', { user_ids: [b.user.id] });
    const quiet = console.error;
    console.error = () => {};
    try {
      watcher.on('presence', () => {
        throw new Error('handler bug');
      });
      const heard = new Promise<PresenceEvent>((resolve) => watcher.on('presence', resolve));
      await client({ accessToken: b.access_token, wsUrl: undefined }).call('presence.status', {
        status_message: 'still here',
      });
      expect(await heard).toMatchObject({ user_id: b.user.id, status_message: 'still here' });
    } finally {
      console.error = quiet;
    }
    await expect(watcher.call('ping')).resolves.toEqual({ ts: expect.any(Number) });
  });

  it('stops for good on close(): calls fail with CLOSED and a new token does not reopen the socket', async () => {
    const a = await registerUser(app);
    const closing = client({ wsUrl: proxiedWsUrl, accessToken: a.access_token });
    await closing.ready();
    closing.close();
    expect(closing.state).toBe('closed');
    expect((await rejectionOf(closing.call('presence.query', { user_ids: ['x'] }))).code).toBe('CLOSED');
    expect((await rejectionOf(closing.call('ping'))).code).toBe('CLOSED');
    closing.setAccessToken(a.access_token);
    expect(closing.state).toBe('closed');
  });
});

describe.skipIf(!hasRedisServer())(
  'AtriumClient when its node lost events on their way (needs redis-server on PATH)',
  () => {
    let redis: RedisServer;
    let app: TestApp;

    beforeAll(async () => {
      redis = await RedisServer.start();
      app = await buildTestApp({ REDIS_URL: redis.url });
    });

    afterAll(async () => {
      await app?.close();
      await redis?.stop();
    });

    it('reports a stream.reset through onMissedEvents for each stream, and stays connected', async () => {
      const a = await registerUser(app);
      const watcher = new AtriumClient({
        httpUrl: app.httpUrl,
        wsUrl: app.wsUrl,
        WebSocket,
        accessToken: a.access_token,
      });
      const states: ConnectionState[] = [];
      const missed: unknown[] = [];
      watcher.onMissedEvents((what) => missed.push(what));
      await watcher.ready();
      // From here on, any state change would be a reconnect: the socket must stay as it is.
      watcher.onStateChange((state) => states.push(state));
      const world = await watcher.call('worlds.create', { name: 'Reset', visibility: 'public' });
      await watcher.call('chat.join', { world_id: world.id });

      // A restarted Redis without persistence lost the histories the node would fill its gap from.
      await redis.stop();
      await redis.start();
      await expect.poll(() => missed.length, { timeout: 10_000 }).toBe(2);
      expect(missed).toEqual(
        expect.arrayContaining([{ stream: 'user' }, { stream: 'chat', world_id: world.id, room_id: null }]),
      );
      expect(states).toEqual([]);
      watcher.close();
    });
  },
);

describe('AtriumClient over REST (stubbed fetch)', () => {
  const restClient = (fetch: FetchLike, options: Partial<AtriumClientOptions> = {}) =>
    new AtriumClient({ httpUrl: 'http://api.test/', fetch, accessToken: 'token-1', ...options });

  it('builds requests from the catalogue: path fields in the path, the rest in the body, a bearer only where needed', async () => {
    const { fetch, requests } = stubFetch(200, {});
    const client = restClient(fetch);
    await client.call('users.get', { user_id: 'a b/c' });
    await client.call('users.deleteMe', { password: 'pw' });
    await client.call('auth.login', { username: 'someone', password: 'pw' });
    await client.call('presence.heartbeat');
    expect(
      requests.map(({ url, init }) => [init.method, url, init.body, init.headers.authorization]),
    ).toEqual([
      ['GET', 'http://api.test/api/users/a%20b%2Fc', undefined, 'Bearer token-1'],
      ['DELETE', 'http://api.test/api/users/me', '{"password":"pw"}', 'Bearer token-1'],
      ['POST', 'http://api.test/api/auth/login', '{"username":"someone","password":"pw"}', undefined],
      ['POST', 'http://api.test/api/presence/heartbeat', undefined, 'Bearer token-1'],
    ]);
  });

  it('turns problem+json into an AtriumError with the code, the detail, the field errors and Retry-After', async () => {
    const problem = {
      type: 'urn:atrium:problem:rate_limited',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Too many attempts.',
      code: 'RATE_LIMITED',
      errors: [{ path: 'body.username', message: 'slow down' }],
    };
    const { fetch } = stubFetch(429, problem, { 'retry-after': '7' });
    const error = await rejectionOf(restClient(fetch).call('auth.login', { username: 'x', password: 'y' }));
    expect(error).toMatchObject({
      code: 'RATE_LIMITED',
      message: 'Too many attempts.',
      errors: problem.errors,
      retryAfter: 7,
    });
  });

  it('answers null for a 204 and fails with BAD_RESPONSE on an error without problem details', async () => {
    await expect(
      restClient(stubFetch(204, undefined).fetch).call('auth.logout', { refresh_token: 'r' }),
    ).resolves.toBe(null);
    const error = await rejectionOf(restClient(stubFetch(502, undefined).fetch).call('users.me'));
    expect(error.code).toBe('BAD_RESPONSE');
  });

  it('fails with TIMEOUT when no answer comes, and with CLOSED when the client closes meanwhile', async () => {
    const hang: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) =>
        init.signal.addEventListener('abort', () => reject(init.signal.reason)),
      );
    expect((await rejectionOf(restClient(hang, { requestTimeoutMs: 20 }).call('users.me'))).code).toBe(
      'TIMEOUT',
    );
    const closing = restClient(hang);
    const pending = closing.call('users.me');
    closing.close();
    expect((await rejectionOf(pending)).code).toBe('CLOSED');
  });

  it('fails with CONNECT_FAILED when the API cannot be reached', async () => {
    const client = new AtriumClient({ httpUrl: 'http://127.0.0.1:1', accessToken: 'token-1' });
    expect((await rejectionOf(client.call('users.me'))).code).toBe('CONNECT_FAILED');
  });
});
