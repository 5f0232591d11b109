import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageBodySchema } from '../../protocol/chat.js';
import { shownAtMost } from '../../protocol/text.js';
import { shownText } from '../../src/platform/trimmed-text.js';
import { useTestApp } from '../helpers/app.js';
import {
  COMPONENTS_ID,
  type Exchange,
  OpenApiCheck,
  type OpenApiDocument,
  relocated,
} from '../helpers/openapi-check.js';

/**
 * The published document against JSON Schema 2020-12 and against what the service answers; the
 * check every test app runs over its exchanges (test/helpers/openapi-recorder.ts) is tested here
 * too, so that it is known to fail when the document and the service disagree.
 */

type Schema = Record<string, unknown>;
interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { schema?: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }>; headers?: unknown }>;
}
type Document = OpenApiDocument & {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const app = useTestApp();
let document: Document;

beforeAll(async () => {
  document = (await app().http.inject({ method: 'GET', url: '/openapi.json' })).json() as Document;
});

const operationsOf = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

describe('the OpenAPI document', () => {
  it('compiles every schema under a strict JSON Schema 2020-12 validator', () => {
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, validateFormats: false });
    // The OpenAPI 3.1 dialect's own keywords, and the extension keywords the document uses.
    ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs', 'x-max-json-bytes', 'x-max-depth']);
    ajv.addSchema(relocated({ $id: COMPONENTS_ID, $defs: document.components.schemas }) as object);
    const failures: string[] = [];
    // Most operations repeat the same few schemas (the Problem reference above all): compile each once.
    const compiled = new Set<string>();
    const compile = (where: string, schema: Schema | undefined) => {
      const text = JSON.stringify(schema);
      if (schema === undefined || compiled.has(text)) return;
      compiled.add(text);
      try {
        ajv.compile(relocated(schema) as object);
      } catch (error) {
        failures.push(`${where}: ${(error as Error).message}`);
      }
    };
    for (const [name, schema] of Object.entries(document.components.schemas)) compile(name, schema);
    for (const { path, method, operation } of operationsOf(document)) {
      const where = `${method} ${path}`;
      for (const parameter of operation.parameters ?? []) compile(`${where} parameter`, parameter.schema);
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {}))
        compile(`${where} ${type} body`, media.schema);
      for (const [status, response] of Object.entries(operation.responses))
        for (const [type, media] of Object.entries(response.content ?? {}))
          compile(`${where} ${status} ${type}`, media.schema);
    }
    expect(failures).toEqual([]);
  });

  it('declares every error answer as application/problem+json and no other way, but the console’s own refusals as pages', () => {
    // The operator console's pages are for people in a browser: the refusals they make themselves
    // (a role, a CSRF token, a failed sign-in) are HTML pages; what the framework refuses before
    // them (413, 415, ...) is a problem as everywhere.
    const isConsole = (operation: Operation) => operation.tags?.includes('console') ?? false;
    const wrong = operationsOf(document).flatMap(({ path, method, operation }) =>
      Object.entries(operation.responses)
        .filter(([status]) => Number(status) >= 400 && method !== 'head')
        .filter(([, response]) => {
          const types = Object.keys(response.content ?? {}).join();
          return types !== 'application/problem+json' && !(isConsole(operation) && types === 'text/html');
        })
        .map(([status]) => `${method} ${path} ${status}`),
    );
    expect(wrong).toEqual([]);
    const consolePaths = operationsOf(document).filter(({ operation }) => isConsole(operation));
    expect(consolePaths.every(({ path }) => path.startsWith('/console'))).toBe(true);
  });

  it('declares the statuses every route can answer: 414 and 431 everywhere, 401 where credentials are needed, 422 where a path id is read', () => {
    const missing = operationsOf(document).flatMap(({ path, method, operation }) => {
      const needed = [414, 431];
      if ((operation.security ?? []).length > 0) needed.push(401);
      if (path.includes('{') && method !== 'options') needed.push(422);
      return needed
        .filter((status) => !operation.responses[status])
        .map((status) => `${method} ${path} ${status}`);
    });
    expect(missing).toEqual([]);
  });

  it('declares no body for the answers that have none: every 204, 303 and 304', () => {
    // A validator reading a declared media type expects a body of it, such as a JSON null.
    const withContent = operationsOf(document).flatMap(({ path, method, operation }) =>
      Object.entries(operation.responses)
        .filter(([status, response]) => ['204', '303', '304'].includes(status) && response.content)
        .map(([status]) => `${method} ${path} ${status}`),
    );
    expect(withContent).toEqual([]);
    expect(document.paths['/api/users/me']?.delete?.responses['204']).toEqual({ description: 'Deleted.' });
  });

  it('describes HEAD beside every GET and OPTIONS on every path, with the Allow header', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      expect(item.options?.responses['204']?.headers, path).toHaveProperty('allow');
      if (item.get) expect(item.head?.operationId, path).toBe(`${item.get.operationId}.head`);
    }
  });

  it('describes itself, the reference page, the metrics text and the binary and msgpack bodies', () => {
    const media = (path: string, method: string, status: string) =>
      Object.keys(document.paths[path]?.[method]?.responses[status]?.content ?? {});
    expect(media('/openapi.json', 'get', '200')).toEqual(['application/json']);
    expect(media('/docs', 'get', '200')).toEqual(['text/html']);
    expect(media('/metrics', 'get', '200')).toEqual(['text/plain']);
    const chunk = '/api/worlds/{world_id}/rooms/{room_id}/chunks/{x}/{y}/{z}';
    expect(media(chunk, 'get', '200').sort()).toEqual(['application/json', 'application/octet-stream']);
    expect(Object.keys(document.paths[chunk]?.put?.requestBody?.content ?? {}).sort()).toEqual([
      'application/json',
      'application/octet-stream',
    ]);
    expect(media('/api/worlds/{world_id}/rooms/{room_id}/content', 'get', '200')).toEqual([
      'application/msgpack',
    ]);
  });

  it('states the message body cap as the service applies it: at most 2000 characters once shown', () => {
    const pattern = new RegExp(shownAtMost(2000).pattern, 'u');
    const documented = JSON.stringify(
      document.paths['/api/chat/dm/{user_id}/messages']?.post?.requestBody?.content['application/json']
        ?.schema,
    );
    expect(documented).toContain(JSON.stringify(shownAtMost(2000).pattern).slice(1, -1));
    const text = fc
      // Text showing nothing at all is refused (a message) or clears the field whatever its length.
      .array(fc.constantFrom('x', ' ', '\n', '\u202E', '\u2066', '😀', '\u200B'), { maxLength: 2030 })
      .filter((characters) => characters.some((character) => character === 'x' || character === '😀'))
      .map((characters) => characters.join(''));
    fc.assert(
      fc.property(text, (value) => pattern.test(value) === [...shownText(value)].length <= 2000),
      { numRuns: 300 },
    );
    expect(messageBodySchema.safeParse(`${' '.repeat(100)}${'x'.repeat(2001)}`).success).toBe(true);
    expect(pattern.test(`${' '.repeat(100)}${'x'.repeat(2000)}\u202E `)).toBe(true);
    expect(pattern.test(`${'x'.repeat(1000)} ${'x'.repeat(1000)}`)).toBe(false);
  });
});

describe('the exchange check', () => {
  let check: OpenApiCheck;
  beforeAll(() => {
    check = new OpenApiCheck(document);
  });
  const exchange = (overrides: Partial<Exchange>): Exchange => ({
    method: 'GET',
    url: '/api/worlds/w1',
    requestHeaders: {},
    requestBody: undefined,
    status: 404,
    responseHeaders: { 'content-type': 'application/problem+json; charset=utf-8' },
    responseBody: Buffer.from(
      JSON.stringify({
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: 'No.',
        code: 'NOT_FOUND',
      }),
    ),
    ...overrides,
  });

  it('passes an answer the document describes', () => {
    expect(check.check(exchange({}))).toEqual([]);
  });

  it('reports a status the operation does not declare', () => {
    expect(check.check(exchange({ status: 418 }))).toEqual([
      'GET /api/worlds/{world_id} -> 418: status 418 is not declared',
    ]);
  });

  it('reports a media type the status does not declare', () => {
    expect(check.check(exchange({ responseHeaders: { 'content-type': 'application/json' } }))).toEqual([
      'GET /api/worlds/{world_id} -> 404: media type application/json is not declared (declared: application/problem+json)',
    ]);
  });

  it('reports a body that does not match the schema', () => {
    const [violation] = check.check(exchange({ responseBody: Buffer.from('{"code":"NOT_FOUND"}') }));
    expect(violation).toMatch(/^GET \/api\/worlds\/\{world_id\} -> 404: the response body does not match/);
  });

  it('reports a success answering a request the document refuses', () => {
    const [violation] = check.check(
      exchange({
        method: 'PUT',
        url: '/api/presence/status',
        requestHeaders: { 'content-type': 'application/json' },
        requestBody: Buffer.from(JSON.stringify({ status_message: 'x'.repeat(141) })),
        status: 200,
        responseHeaders: { 'content-type': 'application/json' },
        responseBody: Buffer.from(JSON.stringify({ status_message: 'x' })),
      }),
    );
    expect(violation).toMatch(/^PUT \/api\/presence\/status -> 200: the request body does not match/);
  });

  it('reads an absolute-form target and an empty path segment as the router does', () => {
    expect(check.check(exchange({ url: 'http://127.0.0.1/api/worlds/w1' }))).toEqual([]);
    expect(check.check(exchange({ url: '/api/worlds/', status: 418 }))).toEqual([
      'GET /api/worlds/{world_id} -> 418: status 418 is not declared',
    ]);
  });

  it('reports a path the document does not describe unless it answered 404', () => {
    expect(check.check(exchange({ url: '/nowhere', status: 404 }))).toEqual([]);
    expect(check.check(exchange({ url: '/nowhere', status: 200 }))).toEqual([
      'GET /nowhere -> 200: the document describes no such path',
    ]);
  });
});
