import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { createHttpServer, type HttpServer } from '../../src/platform/http.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';

/**
 * Swagger UI loads on the reference page's first request (src/platform/docs-page.ts): each of its
 * paths answers on a fresh server as the plugin itself answers it.
 */
describe('the API reference page, loaded on first use', () => {
  let http: HttpServer;

  beforeAll(async () => {
    const config = configFrom({ LOG_LEVEL: 'silent' });
    http = await createHttpServer({ config, log: createLogger(config), metrics: createMetrics() });
    http.get('/ping', { schema: { operationId: 'ping', security: [] } }, async () => ({ ok: true }));
    await http.ready();
  });

  afterAll(async () => {
    await http.close();
  });

  it('answers HEAD /docs first, with the page headers and no body', async () => {
    const head = await http.inject({ method: 'HEAD', url: '/docs' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(head.body).toBe('');
    const page = await http.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-initializer.js');
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(page.body));
    expect(page.headers['x-request-id']).toBeDefined();
  });

  it('serves the service document at /docs/json and /docs/yaml, as /openapi.json says it', async () => {
    const document = (await http.inject({ method: 'GET', url: '/openapi.json' })).json();
    const json = await http.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual(document);
    expect(document.paths['/ping']).toBeDefined();
    const yaml = await http.inject({ method: 'GET', url: '/docs/yaml' });
    expect(yaml.statusCode).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/x-yaml/);
    expect(yaml.body).toContain('/ping:');
  });

  it('serves the UI scripts and redirects the old index path to the page', async () => {
    const script = await http.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect([script.statusCode, script.headers['content-type']]).toEqual([
      200,
      'application/javascript; charset=utf-8',
    ]);
    const bundle = await http.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(bundle.statusCode).toBe(200);
    expect(bundle.body.length).toBeGreaterThan(100_000);
    const index = await http.inject({ method: 'GET', url: '/docs/static/index.html' });
    expect(index.statusCode).toBe(302);
    expect(index.headers.location).toBe('/docs/');
  });

  it('keeps its routes out of the OpenAPI document, except the page itself', async () => {
    const document = (await http.inject({ method: 'GET', url: '/openapi.json' })).json();
    const docsPaths = Object.keys(document.paths).filter((path) => path.startsWith('/docs'));
    expect(docsPaths).toEqual(['/docs']);
  });
});
