import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageBodySchema } from '../../protocol/chat.js';
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
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
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
    ajv.addVocabulary([
      'example',
      'discriminator',
      'xml',
      'externalDocs',
      'x-max-json-bytes',
      'x-max-depth',
      'x-max-shown-length',
    ]);
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

  it('declares a body an operation reads as {} when left out (rest.optionalBody) not required, and every other body required', () => {
    const optional = operationsOf(document)
      .filter(({ operation }) => operation.requestBody && operation.requestBody.required !== true)
      .map(({ path, method }) => `${method} ${path}`);
    expect(optional).toEqual(['post /api/parties', 'post /api/worlds/{world_id}/join']);
    expect(document.paths['/api/worlds/{world_id}/join']?.post).not.toHaveProperty('x-optional-body');
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

  it('states the message body cap no stricter than the service: 8000 characters raw, 2000 once shown in x-max-shown-length', () => {
    const documented = document.paths['/api/chat/dm/{user_id}/messages']?.post?.requestBody?.content[
      'application/json'
    ]?.schema as { properties: { body: Schema } };
    const body = documented.properties.body;
    expect(body).toMatchObject({ minLength: 1, maxLength: 8000, 'x-max-shown-length': 2000 });
    expect(body).not.toHaveProperty('pattern');
    const ajv = new Ajv2020({ strict: false });
    ajv.addVocabulary(['x-max-shown-length']);
    const validate = ajv.compile(body);
    const text = fc
      .array(fc.constantFrom('x', ' ', '\n', '\u202E', '\u2066', '😀', '\u200B'), {
        maxLength: 8030,
        size: 'max',
      })
      .map((characters) => characters.join(''));
    // Whatever the service takes, the document takes too.
    fc.assert(
      fc.property(text, (value) => {
        const taken = messageBodySchema.safeParse(value).success && [...shownText(value)].length <= 2000;
        return !taken || validate(value);
      }),
      { numRuns: 300 },
    );
    const padded = `${' '.repeat(3000)}${'x'.repeat(2000)}${'\u202E'.repeat(3000)}`;
    expect([...shownText(padded)]).toHaveLength(2000);
    expect([messageBodySchema.safeParse(padded).success, validate(padded)]).toEqual([true, true]);
    expect(validate('x'.repeat(8001))).toBe(false);
  });

  it('states every pattern so that other regex engines compile it: no repetition over 1000, no lookaround or backreference, no bare [ in a class', () => {
    const patterns = new Set<string>();
    const collect = (value: unknown): void => {
      if (typeof value !== 'object' || value === null) return;
      for (const [key, nested] of Object.entries(value)) {
        if (key === 'pattern' && typeof nested === 'string') patterns.add(nested);
        else if (key === 'patternProperties' && typeof nested === 'object' && nested !== null)
          for (const name of Object.keys(nested)) patterns.add(name);
        collect(nested);
      }
    };
    collect(document);
    expect(patterns.size).toBeGreaterThan(0);
    expect(
      [...patterns]
        .filter((pattern) => unportable(pattern) !== undefined)
        .map((pattern) => [pattern, unportable(pattern)]),
    ).toEqual([]);
  });
});

/**
 * What keeps a pattern from compiling alike in ECMAScript (JSON Schema's dialect), RE2 (Go) and
 * Rust's regex, which count repetitions to 1000, know no lookaround or backreference, and read
 * `[` in a class as a nested class (Rust); undefined when nothing does.
 */
function unportable(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
  } catch {
    return 'ECMAScript refuses it';
  }
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const character = pattern[i];
    const rest = pattern.slice(i);
    if (character === '\\') {
      if (/^\\([1-9]|k<)/.test(rest)) return 'a backreference';
      i++;
    } else if (inClass) {
      if (character === '[') return 'a bare [ in a class';
      if (character === ']') inClass = false;
    } else if (character === '[') {
      inClass = true;
      // A ] first in a class (after an optional ^) closes it in ECMAScript, and is a literal in RE2 and Rust.
      if (/^\[\^?\]/.test(rest)) return 'a ] first in a class';
    } else if (/^\(\?<?[=!]/.test(rest)) return 'a lookaround';
    else {
      const counted = /^\{(\d+)(?:,(\d*))?\}/.exec(rest);
      if (counted && Math.max(Number(counted[1]), Number(counted[2] || 0)) > 1000)
        return `a repetition of ${counted[0]}`;
    }
  }
  return undefined;
}

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

  it('reports a body the document declares and the service did not send, such as a JSON null on a 204', () => {
    const follow = exchange({
      method: 'PUT',
      url: '/api/follows/u1',
      status: 204,
      responseHeaders: {},
      responseBody: Buffer.alloc(0),
    });
    // The 204 as @fastify/swagger wrote a z.null() response: a JSON body of any value.
    const declaringNull = new OpenApiCheck({
      paths: {
        '/api/follows/{user_id}': {
          put: {
            responses: { 204: { content: { 'application/json': { schema: { description: 'Success.' } } } } },
          },
        },
      },
    });
    expect(declaringNull.check(follow)).toEqual([
      'PUT /api/follows/{user_id} -> 204: the document declares a body (application/json) the service did not send',
    ]);
    expect(check.check(follow)).toEqual([]);
    expect(check.check({ ...follow, method: 'HEAD', url: '/api/worlds/w1', status: 404 })).toEqual([]);
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
        requestBody: Buffer.from(JSON.stringify({ status_message: 'x'.repeat(1001) })),
        status: 200,
        responseHeaders: { 'content-type': 'application/json' },
        responseBody: Buffer.from(JSON.stringify({ status_message: 'x' })),
      }),
    );
    expect(violation).toMatch(/^PUT \/api\/presence\/status -> 200: the request body does not match/);
  });

  it('reads an absolute-form target as the router does, and an empty path parameter as a path the document does not describe', () => {
    expect(check.check(exchange({ url: 'http://127.0.0.1/api/worlds/w1' }))).toEqual([]);
    expect(check.check(exchange({ url: '/api/worlds/', status: 404 }))).toEqual([]);
    expect(check.check(exchange({ url: '/api/worlds/', status: 200 }))).toEqual([
      'GET /api/worlds/ -> 200: the document describes no such path',
    ]);
  });

  it('reports a path the document does not describe unless it answered 404', () => {
    expect(check.check(exchange({ url: '/nowhere', status: 404 }))).toEqual([]);
    expect(check.check(exchange({ url: '/nowhere', status: 200 }))).toEqual([
      'GET /nowhere -> 200: the document describes no such path',
    ]);
  });
});
