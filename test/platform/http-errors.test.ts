import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configFrom } from '../../src/config.js';
import { AppError, ErrorCode } from '../../src/platform/errors.js';
import { createHttpServer, type HttpServer } from '../../src/platform/http.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';

/**
 * The HTTP factory's error contract, exercised through probe routes registered on the real
 * factory: every failure is RFC 9457 problem+json with the contract's status and a stable code.
 */
describe('HTTP error responses', () => {
  let http: HttpServer;
  const received: unknown[] = [];

  beforeAll(async () => {
    const config = configFrom({ LOG_LEVEL: 'silent', HTTP_BODY_LIMIT_BYTES: 1024 });
    http = await createHttpServer({ config, log: createLogger(config), metrics: createMetrics() });
    http.post(
      '/probe',
      { schema: { body: z.object({ name: z.string().min(3), count: z.number().int().max(10) }).strict() } },
      async (request) => {
        received.push(request.body);
        return { ok: true };
      },
    );
    http.get('/conflict', async () => {
      throw new AppError(ErrorCode.CONFLICT, 'Already exists.');
    });
    http.get('/limited', async () => {
      throw new AppError(ErrorCode.RATE_LIMITED, 'Slow down.', { retryAfterSeconds: 7 });
    });
    http.get('/crash', async () => {
      throw new Error('select * from secret_table failed at /srv/app.ts:12');
    });
    http.get('/redis-down', async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:6379'), { code: 'ECONNREFUSED' });
    });
    http.get('/deadlock', async () => {
      throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
    });
    http.get('/things/:id', async () => ({ ok: true }));
    http.delete('/things/:id', async () => ({ ok: true }));
    http.post('/only-post', async () => ({ ok: true }));
    await http.ready();
  });

  afterAll(async () => {
    await http.close();
  });

  const expectProblem = (
    response: { headers: Record<string, unknown>; json(): unknown },
    status: number,
    code: string,
  ) => {
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = response.json() as Record<string, unknown>;
    expect(body).toMatchObject({ status, code, type: `urn:atrium:problem:${code.toLowerCase()}` });
    expect(typeof body.title).toBe('string');
    expect(typeof body.detail).toBe('string');
    return body;
  };

  it('answers malformed JSON with 400 MALFORMED_REQUEST and does not run the handler', async () => {
    const before = received.length;
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "abc",',
    });
    expect(response.statusCode).toBe(400);
    expectProblem(response, 400, 'MALFORMED_REQUEST');
    expect(received.length).toBe(before);
  });

  it('answers an unknown route with 404 ROUTE_NOT_FOUND', async () => {
    const response = await http.inject({ method: 'GET', url: '/api/nothing-here?x=1' });
    expect(response.statusCode).toBe(404);
    const body = expectProblem(response, 404, 'ROUTE_NOT_FOUND');
    expect(body.detail).toBe('No route GET /api/nothing-here.');
  });

  it('answers a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const before = received.length;
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(2000), count: 1 }),
    });
    expect(response.statusCode).toBe(413);
    expectProblem(response, 413, 'PAYLOAD_TOO_LARGE');
    expect(received.length).toBe(before);
  });

  it('answers a schema violation with 422 VALIDATION_FAILED listing each field', async () => {
    const before = received.length;
    const response = await http.inject({ method: 'POST', url: '/probe', payload: { name: 'ab', count: 11 } });
    expect(response.statusCode).toBe(422);
    const body = expectProblem(response, 422, 'VALIDATION_FAILED');
    const paths = (body.errors as { path: string }[]).map((e) => e.path).sort();
    expect(paths).toEqual(['body.count', 'body.name']);
    expect(received.length).toBe(before);
  });

  it('answers unknown fields on a strict body with 422', async () => {
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      payload: { name: 'abc', count: 1, admin: true },
    });
    expect(response.statusCode).toBe(422);
    expectProblem(response, 422, 'VALIDATION_FAILED');
  });

  it('answers wrong types with 422 rather than coercing them', async () => {
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      payload: { name: 'abc', count: '5' },
    });
    expect(response.statusCode).toBe(422);
  });

  it('accepts a valid body and runs the handler', async () => {
    const response = await http.inject({ method: 'POST', url: '/probe', payload: { name: 'abc', count: 3 } });
    expect(response.statusCode).toBe(200);
    expect(received.at(-1)).toEqual({ name: 'abc', count: 3 });
  });

  it('reads a __proto__ key as a plain field, which a strict body refuses with 422, polluting nothing', async () => {
    const before = received.length;
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"abc","count":1,"__proto__":{"admin":true}}',
    });
    expect(response.statusCode).toBe(422);
    expectProblem(response, 422, 'VALIDATION_FAILED');
    expect(received.length).toBe(before);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('answers an unsupported content type with 415', async () => {
    const response = await http.inject({
      method: 'POST',
      url: '/probe',
      headers: { 'content-type': 'application/xml' },
      payload: '<a/>',
    });
    expect(response.statusCode).toBe(415);
    expectProblem(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('maps a thrown AppError through the code table', async () => {
    const response = await http.inject({ method: 'GET', url: '/conflict' });
    expect(response.statusCode).toBe(409);
    expect(expectProblem(response, 409, 'CONFLICT').detail).toBe('Already exists.');
  });

  it('sends Retry-After in seconds with a 429', async () => {
    const response = await http.inject({ method: 'GET', url: '/limited' });
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('7');
    expectProblem(response, 429, 'RATE_LIMITED');
  });

  it('answers an unexpected failure with 500 without leaking SQL, paths or stack traces', async () => {
    const response = await http.inject({ method: 'GET', url: '/crash' });
    expect(response.statusCode).toBe(500);
    const body = expectProblem(response, 500, 'INTERNAL');
    expect(response.body).not.toContain('secret_table');
    expect(response.body).not.toContain('app.ts');
    expect(body.detail).toBe('An unexpected error occurred.');
  });

  it('answers a dependency failure with 503 SERVICE_UNAVAILABLE and Retry-After, without its address', async () => {
    const response = await http.inject({ method: 'GET', url: '/redis-down' });
    expect(response.statusCode).toBe(503);
    expectProblem(response, 503, 'SERVICE_UNAVAILABLE');
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.body).not.toContain('10.9.8.7');
  });

  it('answers a transaction Postgres kept cancelling as a deadlock with 503 SERVICE_UNAVAILABLE and Retry-After, never 500', async () => {
    const response = await http.inject({ method: 'GET', url: '/deadlock' });
    expect(response.statusCode).toBe(503);
    expectProblem(response, 503, 'SERVICE_UNAVAILABLE');
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers a path that is not valid percent-encoding with 400 MALFORMED_REQUEST', async () => {
    const response = await http.inject({ method: 'GET', url: '/things/%E0%A4%A' });
    expect(response.statusCode).toBe(400);
    expectProblem(response, 400, 'MALFORMED_REQUEST');
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a path parameter over the length limit with 414 URI_TOO_LONG', async () => {
    const response = await http.inject({ method: 'GET', url: `/things/${'a'.repeat(101)}` });
    expect(response.statusCode).toBe(414);
    expectProblem(response, 414, 'URI_TOO_LONG');
  });

  it('answers a method a path does not serve with 414, as its served methods do, when a path parameter is over the length limit', async () => {
    const url = `/things/${'a'.repeat(101)}`;
    for (const method of ['PUT', 'TRACE', 'OPTIONS'] as const) {
      const response = await http.inject({ method, url });
      expect(response.statusCode).toBe(414);
      expect(response.headers.allow).toBeUndefined();
      expectProblem(response, 414, 'URI_TOO_LONG');
    }
  });

  it('answers a known path with a method it does not serve with 405 and Allow listing the methods', async () => {
    const response = await http.inject({ method: 'PUT', url: '/things/42?x=1' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('DELETE, GET, HEAD, OPTIONS');
    const body = expectProblem(response, 405, 'METHOD_NOT_ALLOWED');
    expect(body.detail).toBe('/things/42 does not accept PUT; it accepts DELETE, GET, HEAD, OPTIONS.');
  });

  it('answers HEAD on a path served only by POST with 405, listing POST without HEAD', async () => {
    const response = await http.inject({ method: 'HEAD', url: '/only-post' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('OPTIONS, POST');
    expect(response.body).toBe('');
  });

  it('answers a file the reference page does not have with 404 ROUTE_NOT_FOUND, to GET and HEAD, as an unknown path', async () => {
    const served = await http.inject({ method: 'GET', url: '/docs/static/index.css' });
    expect(served.statusCode).toBe(200);
    const missing = await http.inject({ method: 'GET', url: '/docs/static/missing.js' });
    expect(missing.headers.allow).toBeUndefined();
    const body = expectProblem(missing, 404, 'ROUTE_NOT_FOUND');
    expect(body.detail).toBe('No route GET /docs/static/missing.js.');
    const head = await http.inject({ method: 'HEAD', url: '/docs/static/missing.js' });
    expect([head.statusCode, head.headers['content-type'], head.body]).toEqual([
      404,
      'application/problem+json; charset=utf-8',
      '',
    ]);
  });

  it('answers OPTIONS on a known path with 204 and Allow, and on an unknown path with 404', async () => {
    const known = await http.inject({ method: 'OPTIONS', url: '/only-post' });
    expect(known.statusCode).toBe(204);
    expect(known.headers.allow).toBe('OPTIONS, POST');
    const unknown = await http.inject({ method: 'OPTIONS', url: '/nowhere' });
    expect(unknown.statusCode).toBe(404);
    expectProblem(unknown, 404, 'ROUTE_NOT_FOUND');
  });

  it('answers a path whose parameter is empty with 404 ROUTE_NOT_FOUND under every method, as a path it does not serve', async () => {
    for (const url of ['/things/', '/things//', '/api/users//followers']) {
      for (const method of ['GET', 'DELETE', 'POST', 'OPTIONS'] as const) {
        const answer = await http.inject({ method, url });
        expect(answer.headers.allow, `${method} ${url}`).toBeUndefined();
        expect(expectProblem(answer, 404, 'ROUTE_NOT_FOUND').detail).toBe(`No route ${method} ${url}.`);
      }
    }
    expect((await http.inject({ method: 'GET', url: '/things/1' })).statusCode).toBe(200);
  });

  it('echoes a plain X-Request-Id and replaces an unsafe one', async () => {
    const kept = await http.inject({
      method: 'GET',
      url: '/conflict',
      headers: { 'x-request-id': 'trace-42' },
    });
    expect(kept.headers['x-request-id']).toBe('trace-42');
    const replaced = await http.inject({
      method: 'GET',
      url: '/conflict',
      headers: { 'x-request-id': 'bad id\n' },
    });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
