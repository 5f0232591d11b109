import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { configFrom } from '../../src/config.js';
import { createHttpServer, type HttpServer } from '../../src/platform/http.js';
import { InFlight } from '../../src/platform/in-flight.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics, type Metrics } from '../../src/platform/metrics.js';

/**
 * The HTTP factory's request plumbing: per-request log lines (written only when a request logs
 * something, and then bound to its request id), response serialization from the route's
 * schema, and the request duration histogram.
 */
describe('HTTP server plumbing', () => {
  let http: HttpServer;
  let metrics: Metrics;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const config = configFrom({ LOG_LEVEL: 'info' });
    const log = createLogger(config, { write: (line: string) => void lines.push(JSON.parse(line)) });
    metrics = createMetrics();
    http = await createHttpServer({ config, log, metrics });
    http.get('/quiet', async () => ({ ok: true }));
    http.get('/chatty', async (request) => {
      request.log.info({ headers: { authorization: 'Bearer not-for-logs' } }, 'chatty handler ran');
      request.log.debug('below the level');
      return { ok: true };
    });
    http.get('/crash', async () => {
      throw new Error('boom');
    });
    http.get(
      '/shaped',
      {
        schema: {
          response: {
            200: z.object({
              name: z.string(),
              at: z.date(),
              nickname: z.string().nullable(),
              loadout: z.looseObject({ base_body: z.string() }),
            }),
          },
        },
      },
      async () =>
        ({
          name: 'ada',
          at: new Date('2026-01-02T03:04:05.000Z'),
          nickname: null,
          loadout: { base_body: 'b1', hat: { color: 'red' } },
          password_hash: 'must not leave the server',
        }) as never,
    );
    await http.ready();
  });

  afterAll(async () => {
    await http.close();
  });

  it('writes no log line for a request that logs nothing at the configured level', async () => {
    const before = lines.length;
    const response = await http.inject({ method: 'GET', url: '/quiet' });
    expect(response.statusCode).toBe(200);
    expect(lines.length).toBe(before);
  });

  it("binds a handler's log lines to the request id and redacts credentials in them", async () => {
    const before = lines.length;
    const response = await http.inject({
      method: 'GET',
      url: '/chatty',
      headers: { 'x-request-id': 'trace-7' },
    });
    expect(response.headers['x-request-id']).toBe('trace-7');
    const written = lines.slice(before);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({
      reqId: 'trace-7',
      msg: 'chatty handler ran',
      headers: { authorization: '[redacted]' },
    });
  });

  it('logs a failed request at error level with its request id', async () => {
    const before = lines.length;
    const response = await http.inject({ method: 'GET', url: '/crash' });
    expect(response.statusCode).toBe(500);
    const errors = lines.slice(before).filter((line) => line.level === 50);
    expect(errors.length).toBeGreaterThan(0);
    for (const line of errors) expect(line.reqId).toBe(response.headers['x-request-id']);
  });

  it('serializes only the fields the response schema declares, keeping extras where it is loose', async () => {
    const response = await http.inject({ method: 'GET', url: '/shaped' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      name: 'ada',
      at: '2026-01-02T03:04:05.000Z',
      nickname: null,
      loadout: { base_body: 'b1', hat: { color: 'red' } },
    });
  });

  it('counts request durations per method, route pattern and status, unmatched routes included', async () => {
    const count = async (labels: string) => {
      const text = await metrics.registry.metrics();
      const pattern = new RegExp(`atrium_http_request_duration_seconds_count\\{${labels}\\} (\\d+)`);
      return Number(pattern.exec(text)?.[1] ?? 0);
    };
    const quiet = 'method="GET",route="/quiet",status="200"';
    const unmatched = 'method="GET",route="unmatched",status="404"';
    const [quietBefore, unmatchedBefore] = [await count(quiet), await count(unmatched)];
    for (let i = 0; i < 3; i++) await http.inject({ method: 'GET', url: '/quiet' });
    await http.inject({ method: 'GET', url: '/nowhere' });
    expect(await count(quiet)).toBe(quietBefore + 3);
    expect(await count(unmatched)).toBe(unmatchedBefore + 1);
  });
});

describe('HTTP server shutdown', () => {
  it('answers a request that arrives while it closes 503 SERVICE_UNAVAILABLE as problem+json with Retry-After', async () => {
    const config = configFrom({ LOG_LEVEL: 'silent' });
    const http = await createHttpServer({ config, log: createLogger(config), metrics: createMetrics() });
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      http.get('/slow', () => {
        resolve();
        return new Promise((done) => (release = () => done({ ok: true })));
      });
    });
    http.get('/fast', async () => ({ ok: true }));
    await http.listen({ port: 0, host: '127.0.0.1' });
    const { port } = http.server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      received += chunk;
    });
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await started;
    const closed = http.close();
    // Once the server stops listening, a request on a connection still in use (as a load
    // balancer's keep-alive connection is) arrives during the close.
    await vi.waitFor(() => expect(http.server.listening).toBe(false));
    const arrived = new Promise((resolve) =>
      http.server.on('request', (request: IncomingMessage) => request.url === '/fast' && resolve(undefined)),
    );
    socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await arrived;
    release();
    await Promise.all([closed, ended]);
    const [, second = ''] = received.split(/(?=HTTP\/1\.1 )/);
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(second).toMatch(/content-type: application\/problem\+json/i);
    expect(second).toMatch(/retry-after: 1\r\n/i);
    expect(second).toContain('"code":"SERVICE_UNAVAILABLE"');
  });

  it('stops counting a request as running when its client left before its body was read, so shutdown need not wait for a body that never comes', async () => {
    const config = configFrom({ LOG_LEVEL: 'silent' });
    const inFlight = new InFlight();
    const http = await createHttpServer({
      config,
      log: createLogger(config),
      metrics: createMetrics(),
      inFlight,
    });
    let arrived: (request: IncomingMessage) => void = () => {};
    const requestArrived = new Promise<IncomingMessage>((resolve) => (arrived = resolve));
    let proceed: () => void = () => {};
    const mayProceed = new Promise<void>((resolve) => (proceed = resolve));
    let handled = false;
    http.post(
      '/held',
      // An onRequest hook that awaits (as authentication may) holds the body unread meanwhile.
      {
        onRequest: async (request) => {
          arrived(request.raw);
          await mayProceed;
        },
      },
      async () => {
        handled = true;
        return { ok: true };
      },
    );
    await http.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = http.server.address() as AddressInfo;
      const socket = connect(port, '127.0.0.1');
      const body = '{"listing_id":"x"}';
      socket.write(
        `POST /held HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      const raw = await requestArrived;
      const gone = new Promise((resolve) => raw.once('close', resolve));
      socket.destroy();
      await gone;
      expect(inFlight.size).toBe(1);
      proceed();
      expect(await inFlight.idle(30_000)).toBeUndefined();
      expect(handled).toBe(false);
    } finally {
      await http.close();
    }
  });
});
