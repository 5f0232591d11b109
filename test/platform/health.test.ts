import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildTestApp, useTestApp } from '../helpers/app.js';

describe('health, readiness and metrics', () => {
  const app = useTestApp();

  it('reports liveness and that uWebSockets.js loaded natively on this Node', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    const native = Number(process.versions.modules) === 115;
    expect(response.json()).toMatchObject({
      status: 'ok',
      pid: process.pid,
      worker: null,
      gateway: { native, transport: native ? 'uws-native' : 'uws-js-fallback' },
    });
  });

  it('reports ready when the database and the KV store answer', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready', checks: { database: 'ok', kv: 'ok' } });
  });

  it('serves Prometheus metrics including HTTP request durations by route', async () => {
    await app().http.inject({ method: 'GET', url: '/healthz' });
    const response = await app().http.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toMatch(
      /atrium_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} \d+/,
    );
    expect(response.body).toContain('process_resident_memory_bytes');
  });

  it('serves a valid OpenAPI 3.1 document that lists the routes', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/healthz', '/readyz', '/metrics']));
    expect(document.paths['/readyz'].get.responses['503']).toBeDefined();
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('serves the API docs UI at /docs', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/docs' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
  });
});

describe('readiness when a dependency is down', () => {
  it('answers 503 problem+json naming the failed check', async () => {
    const app = await buildTestApp();
    try {
      await app.kv.close();
      const response = await app.http.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json()).toMatchObject({
        code: 'UNAVAILABLE',
        checks: { database: 'ok', kv: 'unavailable' },
      });
    } finally {
      await app.close();
    }
  });
});
