import { decode, encode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { registerUser } from '../test/helpers/accounts.js';
import { buildTestApp, type TestApp } from '../test/helpers/app.js';
import { rejectionOf } from '../test/helpers/rejections.js';
import { CloseCode, type PresenceEvent, REQUEST_ID_MAX } from './frames.js';
import { type AtriumError, AtriumSocket, type WebSocketLike } from './socket.js';

/** Resolves with the first value `register` hands its callback, or rejects after `ms`. */
function firstValue<T>(
  register: (callback: (value: T) => void) => void,
  ms: number,
  what: string,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    register((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

describe('AtriumSocket against the gateway', () => {
  let app: TestApp;
  const clients: AtriumSocket[] = [];

  const connect = async () => {
    const client = await AtriumSocket.connect(app.wsUrl, { WebSocket });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    app = await buildTestApp();
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    await app?.close();
  });

  it('connects and authenticates, resolving with the ack payload and keeping its stream position', async () => {
    const account = await registerUser(app);
    const client = await connect();
    const ack = await client.auth(account.access_token);
    expect(ack).toEqual({
      user_id: account.user.id,
      roles: ['user'],
      position: { offset: 0, epoch: expect.any(String) },
    });
    expect(client.position).toEqual('position' in ack ? ack.position : 'no position');
  });

  it('rejects a frame that needs auth, sent before auth, with UNAUTHENTICATED', async () => {
    const client = await connect();
    const error = await rejectionOf(client.request('presence.heartbeat'));
    expect(error.code).toBe('UNAUTHENTICATED');
    expect(typeof error.requestId).toBe('number');
    expect(error.message).toBeTruthy();
  });

  it('rejects an auth frame with a bad token with UNAUTHENTICATED and keeps the connection', async () => {
    const client = await connect();
    expect((await rejectionOf(client.auth('not.a.token'))).code).toBe('UNAUTHENTICATED');
    expect((await client.ping()).rttMs).toBeGreaterThanOrEqual(0);
  });

  it('measures a round trip with ping', async () => {
    const client = await connect();
    const before = Date.now();
    const { rttMs, serverTime } = await client.ping();
    expect(rttMs).toBeGreaterThanOrEqual(0);
    expect(rttMs).toBeLessThan(5000);
    expect(serverTime).toBeGreaterThanOrEqual(before - 1000);
    expect(serverTime).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('rejects an invalid payload with VALIDATION_FAILED and the field errors', async () => {
    const account = await registerUser(app);
    const client = await connect();
    await client.auth(account.access_token);
    const error = await rejectionOf(client.request('presence.query', { user_ids: [] }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.errors).toEqual([expect.objectContaining({ path: 'd.user_ids' })]);
  });

  it('hands error frames without an id (fire-and-forget frames) to onError', async () => {
    const account = await registerUser(app);
    const client = await connect();
    await client.auth(account.access_token);
    const error = firstValue<AtriumError>((callback) => client.onError(callback), 5000, 'error frame');
    expect(client.send('presence.query', { user_ids: [] })).toBe(true);
    const received = await error;
    expect(received.code).toBe('VALIDATION_FAILED');
    expect(received.requestId).toBeUndefined();
  });

  it('resolves acks of several concurrent requests by id', async () => {
    const account = await registerUser(app);
    const client = await connect();
    await client.auth(account.access_token);
    const [heartbeat, query, status] = await Promise.all([
      client.request('presence.heartbeat'),
      client.request('presence.query', { user_ids: [account.user.id] }),
      client.request('presence.status', { status_message: '  building  ' }),
    ]);
    expect(heartbeat).toMatchObject({ status: 'online', ttl_seconds: expect.any(Number) });
    expect(query).toEqual({ presence: { [account.user.id]: 'online' } });
    expect(status).toEqual({ status_message: 'building' });
  });

  it("delivers a presence event to a subscriber when the subject's first connection authenticates", async () => {
    const [a, b] = await Promise.all([registerUser(app), registerUser(app)]);
    const watcher = await connect();
    await watcher.auth(a.access_token);
    const events: PresenceEvent[] = [];
    const online = firstValue<PresenceEvent>(
      (callback) =>
        watcher.on('presence', (event) => {
          events.push(event);
          if (event.user_id === b.user.id && event.status === 'online') callback(event);
        }),
      5000,
      `presence event for ${b.user.id}`,
    );
    await expect(watcher.request('presence.subscribe', { user_ids: [b.user.id] })).resolves.toEqual({
      presence: { [b.user.id]: 'offline' },
    });

    const subject = await connect();
    await subject.auth(b.access_token);
    expect(await online).toEqual({ user_id: b.user.id, status: 'online', status_message: null });
    expect(events.every((event) => event.user_id === b.user.id)).toBe(true);
  });
});

describe('AtriumSocket when the server goes away', () => {
  let app: TestApp | undefined;
  // The test closes the app itself; TestApp.close (which also drops the database) must run once.
  let closing: Promise<void> | undefined;

  afterAll(async () => {
    await (closing ?? app?.close());
  });

  it('rejects pending requests with CLOSED and reports the close code when the app closes', async () => {
    app = await buildTestApp();
    const account = await registerUser(app);
    const client = await AtriumSocket.connect(app.wsUrl, { WebSocket });
    await client.auth(account.access_token);
    // Sent in the same tick as the shutdown starts: the gateway ends the socket before it reads the frame.
    const pending = client.request('presence.query', { user_ids: [account.user.id] });
    closing = app.close();
    const error = await rejectionOf(pending);
    expect(error.code).toBe('CLOSED');
    await expect(client.closed).resolves.toEqual({
      code: CloseCode.GOING_AWAY,
      reason: 'server shutting down',
    });
    await closing;
    expect((await rejectionOf(client.ping())).code).toBe('CLOSED');
    expect(client.send('ping')).toBe(false);
  });
});

describe('AtriumSocket timeouts', () => {
  // A WebSocket server that accepts connections and never answers: a deterministic timeout.
  let silent: WebSocketServer;
  let url: string;

  beforeAll(async () => {
    silent = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => silent.once('listening', resolve));
    url = `ws://127.0.0.1:${(silent.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    for (const socket of silent.clients) socket.terminate();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('rejects with TIMEOUT after the per-request timeout and with the default timeout from the options', async () => {
    const client = await AtriumSocket.connect(url, { WebSocket, requestTimeoutMs: 30 });
    const perRequest = await rejectionOf(client.request('presence.query', { user_ids: ['x'] }, 5));
    expect(perRequest.code).toBe('TIMEOUT');
    expect(typeof perRequest.requestId).toBe('number');
    expect((await rejectionOf(client.ping())).code).toBe('TIMEOUT');
    client.close();
    await client.closed;
  });

  it('fails to connect with CONNECT_FAILED when nothing listens', async () => {
    const error = await rejectionOf(AtriumSocket.connect('ws://127.0.0.1:1/ws', { WebSocket }));
    expect(error.code).toBe('CONNECT_FAILED');
  });
});

/** An in-memory socket: the test plays the server by feeding it bytes. */
class FakeSocket implements WebSocketLike {
  static last: FakeSocket | undefined;
  binaryType = 'blob';
  readyState = 0;
  readonly sent: Record<string, unknown>[] = [];
  private readonly listeners = new Map<string, ((event: never) => void)[]>();

  constructor(readonly url: string) {
    FakeSocket.last = this;
    queueMicrotask(() => {
      this.readyState = 1;
      this.emit('open', {});
    });
  }

  addEventListener(type: string, listener: (event: never) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: Uint8Array): void {
    this.sent.push(decode(data) as Record<string, unknown>);
  }

  close(code = 1000, reason = ''): void {
    this.readyState = 3;
    this.emit('close', { code, reason });
  }

  receive(data: unknown): void {
    this.emit('message', { data });
  }

  receiveFrame(frame: unknown): void {
    const bytes = encode(frame);
    this.receive(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }

  private emit(type: string, event: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) listener(event as never);
  }
}

describe('AtriumSocket framing (in-memory socket)', () => {
  const open = async (options: { requestTimeoutMs?: number } = {}) => {
    const client = await AtriumSocket.connect('ws://fake/ws', { WebSocket: FakeSocket, ...options });
    const socket = FakeSocket.last as FakeSocket;
    expect(socket.binaryType).toBe('arraybuffer');
    return { client, socket };
  };

  it('sends {t, id, d}, leaves d out when there is no payload, and sends no id with send()', async () => {
    const { client, socket } = await open();
    void client.request('presence.heartbeat').catch(() => {});
    void client.request('presence.query', { user_ids: ['u1'] }).catch(() => {});
    client.send('presence.status', { status_message: 'hi' });
    expect(socket.sent).toEqual([
      { t: 'presence.heartbeat', id: 1 },
      { t: 'presence.query', id: 2, d: { user_ids: ['u1'] } },
      { t: 'presence.status', d: { status_message: 'hi' } },
    ]);
    client.close();
  });

  it('wraps request ids after 2^32-1 and skips ids still pending', async () => {
    const { client, socket } = await open();
    // Jump to the end of the id space instead of sending four billion requests.
    (client as unknown as { nextId: number }).nextId = REQUEST_ID_MAX;
    const last = client.request('presence.heartbeat');
    const wrapped = client.request('presence.heartbeat');
    expect(socket.sent.map((frame) => frame.id)).toEqual([REQUEST_ID_MAX, 0]);
    socket.receiveFrame({ t: 'ack', id: 0, d: { n: 0 } });
    socket.receiveFrame({ t: 'ack', id: REQUEST_ID_MAX, d: { n: 1 } });
    await expect(wrapped).resolves.toEqual({ n: 0 });
    await expect(last).resolves.toEqual({ n: 1 });

    (client as unknown as { nextId: number }).nextId = REQUEST_ID_MAX;
    const stuck = client.request('presence.heartbeat');
    (client as unknown as { nextId: number }).nextId = REQUEST_ID_MAX;
    void client.request('presence.heartbeat').catch(() => {});
    expect(socket.sent.slice(-2).map((frame) => frame.id)).toEqual([REQUEST_ID_MAX, 0]);
    client.close();
    expect((await rejectionOf(stuck)).code).toBe('CLOSED');
  });

  it('ignores frames it does not understand and survives throwing handlers', async () => {
    const { client, socket } = await open();
    const seen: unknown[] = [];
    const quiet = console.error;
    console.error = () => {};
    try {
      client.on('presence', () => {
        throw new Error('handler bug');
      });
      const off = client.on('presence', (event) => seen.push(event));
      socket.receive('{"t":"ack"}');
      socket.receive(new Uint8Array([0xc1, 0xff]).buffer);
      socket.receiveFrame([1, 2, 3]);
      socket.receiveFrame({ t: 42 });
      socket.receiveFrame({ t: 'ack', id: 999, d: {} });
      socket.receiveFrame({ t: 'error', id: 999, code: 'INTERNAL', message: 'late' });
      socket.receiveFrame({ t: 'something.new', d: {} });
      socket.receiveFrame({ t: 'presence', d: { user_id: 'u1', status: 'online', status_message: null } });
      off();
      socket.receiveFrame({ t: 'presence', d: { user_id: 'u2', status: 'online', status_message: null } });
    } finally {
      console.error = quiet;
    }
    expect(seen).toEqual([{ user_id: 'u1', status: 'online', status_message: null }]);
    const answered = client.request('presence.heartbeat');
    const { id } = socket.sent.at(-1) as { id: number };
    socket.receiveFrame({ t: 'ack', id, d: { status: 'online' } });
    await expect(answered).resolves.toEqual({ status: 'online' });
    client.close();
  });

  it('drops the late answer of a timed-out request and keeps working', async () => {
    const { client, socket } = await open({ requestTimeoutMs: 5 });
    const timedOut = client.request('presence.heartbeat');
    const { id } = socket.sent.at(-1) as { id: number };
    const error = await rejectionOf(timedOut);
    expect(error).toMatchObject({ code: 'TIMEOUT', requestId: id });
    socket.receiveFrame({ t: 'ack', id, d: {} });
    const next = client.request('presence.heartbeat', undefined, 1000);
    const nextId = (socket.sent.at(-1) as { id: number }).id;
    expect(nextId).toBe(id + 1);
    socket.receiveFrame({
      t: 'error',
      id: nextId,
      code: 'RATE_LIMITED',
      message: 'slow down',
      retry_after: 1,
    });
    expect(await rejectionOf(next)).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 1, requestId: nextId });
    client.close();
  });
});
