import { encode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOn, type UwsListenSocket, uws } from '../../src/platform/gateway/uws.js';
import { buildTestApp, useTestApp } from '../helpers/app.js';
import { TestSocket } from '../helpers/ws-client.js';

const MAX_FRAME = 1024;

describe('realtime gateway transport', () => {
  const app = useTestApp({ WS_MAX_FRAME_BYTES: MAX_FRAME });
  let socket: TestSocket;

  beforeAll(async () => {
    socket = await TestSocket.connect(app().wsUrl);
  });

  afterAll(async () => {
    socket?.close();
  });

  /** The connection must still answer after every bad frame: one bad frame never costs the session. */
  const expectStillAlive = async (s: TestSocket = socket) => {
    const id = Math.floor(Math.random() * 1_000_000);
    s.sendFrame({ t: 'ping', id });
    const pong = await s.next((f) => f.t === 'pong' && f.id === id);
    expect(typeof pong.ts).toBe('number');
  };

  it('answers a ping frame with a pong carrying the request id and the server time', async () => {
    const before = Date.now();
    socket.sendFrame({ t: 'ping', id: 7 });
    const pong = await socket.next((f) => f.t === 'pong');
    expect(pong.id).toBe(7);
    expect(pong.ts as number).toBeGreaterThanOrEqual(before - 1000);
  });

  it('answers a ping without an id with a pong without an id', async () => {
    socket.sendFrame({ t: 'ping' });
    const pong = await socket.next((f) => f.t === 'pong');
    expect(pong.id).toBeUndefined();
  });

  it('answers garbage bytes with a MALFORMED_REQUEST error frame and keeps the connection', async () => {
    socket.sendRaw(new Uint8Array([0xc1, 0xff, 0x00, 0x13]));
    const error = await socket.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    await expectStillAlive();
  });

  it('answers a truncated msgpack map with MALFORMED_REQUEST', async () => {
    const whole = encode({ t: 'ping', id: 1, d: { text: 'hello' } });
    socket.sendRaw(whole.subarray(0, whole.length - 3));
    const error = await socket.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    await expectStillAlive();
  });

  it('answers a text frame with MALFORMED_REQUEST because frames are binary', async () => {
    socket.sendRaw('{"t":"ping"}');
    const error = await socket.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    expect(error.message).toMatch(/binary/);
    await expectStillAlive();
  });

  it.each([
    ['a msgpack array', [1, 2, 3]],
    ['a bare string', 'ping'],
    ['a map without t', { id: 3 }],
    ['a map whose t is a number', { t: 5, id: 3 }],
    ['a negative request id', { t: 'ping', id: -1 }],
    ['a request id above uint32', { t: 'ping', id: 2 ** 32 }],
    ['a fractional request id', { t: 'ping', id: 1.5 }],
  ])('answers %s with MALFORMED_REQUEST', async (_name, frame) => {
    socket.sendFrame(frame);
    const error = await socket.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    await expectStillAlive();
  });

  it('echoes the request id on an error for a well-formed id in an otherwise bad frame', async () => {
    socket.sendFrame({ t: '', id: 99 });
    const error = await socket.next((f) => f.t === 'error');
    expect(error).toMatchObject({ code: 'MALFORMED_REQUEST', id: 99 });
  });

  it('answers an unknown frame type with UNKNOWN_FRAME_TYPE and the request id', async () => {
    socket.sendFrame({ t: 'teleport', id: 12, d: {} });
    const error = await socket.next((f) => f.t === 'error');
    expect(error).toMatchObject({ code: 'UNKNOWN_FRAME_TYPE', id: 12 });
    await expectStillAlive();
  });

  it('answers a frame over the size limit with FRAME_TOO_LARGE and keeps the connection', async () => {
    socket.sendFrame({ t: 'ping', id: 5, d: 'x'.repeat(MAX_FRAME * 2) });
    const error = await socket.next((f) => f.t === 'error');
    expect(error.code).toBe('FRAME_TOO_LARGE');
    await expectStillAlive();
  });

  it('drops a connection that sends a frame above four times the limit, and only that one', async () => {
    const greedy = await TestSocket.connect(app().wsUrl);
    greedy.sendRaw(new Uint8Array(MAX_FRAME * 4 + 1));
    const closed = await greedy.closed;
    // uWS cuts the TCP connection without a close frame, which a client reports as 1006.
    expect(closed.code).toBe(1006);
    expect(greedy.frames).toEqual([]);
    await expectStillAlive();
  });

  it('counts connections and received frames in the metrics', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/metrics' });
    expect(response.body).toMatch(/atrium_ws_connections 1\b/);
    expect(response.body).toMatch(/atrium_ws_frames_received_total\{type="ping"\} [1-9]/);
    expect(response.body).toMatch(/atrium_ws_error_frames_total\{code="MALFORMED_REQUEST"\} [1-9]/);
  });
});

describe('gateway shutdown', () => {
  it('closes open sockets with 1001 when the app closes', async () => {
    const app = await buildTestApp();
    const socket = await TestSocket.connect(app.wsUrl);
    await app.close();
    const closed = await socket.closed;
    expect(closed.code).toBe(1001);
  });
});

describe('the port the gateway picked', () => {
  const app = useTestApp();

  it('stays its own (WS_PORT=0): another listener sharing ports with SO_REUSEPORT is refused it', async () => {
    const port = app().gateway.port;
    const refused = await new Promise<UwsListenSocket | false>((resolve) =>
      listenOn(uws.App(), { host: '127.0.0.1', port, exclusive: false }, resolve),
    );
    if (refused) uws.us_listen_socket_close(refused);
    expect(refused).toBe(false);
  });
});
