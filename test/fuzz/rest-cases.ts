import fc from 'fast-check';
import { type JsonSchema, mutated, type SchemaContext, schemaArbitrary } from './schema-arbitrary.js';
import { hostileValue } from './values.js';

/** One operation of the OpenAPI document, as the fuzzer needs it. */
export interface Operation {
  /** `METHOD /path/{param}`, the name cases and reports use. */
  id: string;
  method: string;
  path: string;
  pathParams: { name: string; schema: JsonSchema }[];
  queryParams: { name: string; schema: JsonSchema }[];
  /** Header parameters (the economy's Idempotency-Key). */
  headerParams: { name: string; schema: JsonSchema }[];
  body: JsonSchema | undefined;
  /**
   * Per method its path serves (`POST`), the error statuses the document declares as an HTML page
   * (the operator console's own refusals): a case sent with another method is answered by that
   * method's operation.
   */
  htmlErrors: Record<string, number[]>;
}

interface OpenApiOperation {
  parameters?: { name: string; in: string; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { content?: Record<string, unknown> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options', 'head']);

/** Every operation the document lists: a new route is fuzzed the moment it is registered. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => {
    const operations = Object.entries(item).filter(([method]) => HTTP_METHODS.has(method));
    const htmlErrors = Object.fromEntries(
      operations.map(([method, op]) => [
        method.toUpperCase(),
        Object.entries(op.responses ?? {})
          .filter(([status, response]) => Number(status) >= 400 && 'text/html' in (response.content ?? {}))
          .map(([status]) => Number(status)),
      ]),
    );
    return operations.map(([method, op]) => {
      const params = op.parameters ?? [];
      const pick = (where: string) =>
        params.filter((p) => p.in === where).map((p) => ({ name: p.name, schema: p.schema ?? {} }));
      return {
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: pick('path'),
        queryParams: pick('query'),
        headerParams: pick('header'),
        body: op.requestBody?.content?.['application/json']?.schema,
        htmlErrors,
      };
    });
  });
}

/** How the request body is produced when the case is sent. */
export type BodyPlan =
  | { kind: 'none' }
  | { kind: 'value'; value: unknown }
  | { kind: 'bytes'; build: () => string | Uint8Array };

/** Byte-level damage only a real socket can carry (inject goes through no HTTP parser). */
export const RAW_MUTATIONS = [
  'none',
  'huge-header',
  'huge-url',
  'many-headers',
  'nul-in-header',
  'bad-content-length',
  'conflicting-content-length',
  'content-length-and-chunked',
  'bad-chunk-size',
  'bare-lf',
  'bad-version',
  'tls-hello',
  'absolute-url',
  'lowercase-method',
] as const;
export type RawMutation = (typeof RAW_MUTATIONS)[number];

export interface RestCase {
  method: string;
  /** Path and query, already percent-encoded (or deliberately mis-encoded). */
  url: string;
  headers: Record<string, string>;
  /** The fuzz user's token, a live game server's token (scoped to one world), none, or a forged one. */
  auth: { kind: 'token' } | { kind: 'server' } | { kind: 'none' } | { kind: 'bad'; value: string };
  body: BodyPlan;
  /** Set for the share of cases sent over a real TCP connection instead of inject. */
  raw: RawMutation | undefined;
  labels: string[];
  /** Valid JSON with a JSON content type on a well-formed URL: never refused as malformed or unsupported. */
  clean: boolean;
  /** The error statuses the document declares as HTML pages for the method sent, which need not be problems. */
  htmlErrors: number[];
}

const BAD_AUTH = [
  'Bearer ',
  'Bearer not.a.token',
  'Basic YWxhZGRpbjpvcGVuc2VzYW1l',
  // An unsigned token (alg none) for a made-up subject.
  'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4IiwiZXhwIjo0MTAyNDQ0ODAwfQ.',
  // HS256 over the literal string "secret".
  'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.Zk9wGAXu0yBvh6X3iRZt8AeGDkl6kpJ7DMtLA7QaxBI',
  `Bearer ${'a'.repeat(8000)}`,
  'bearer x',
];

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'Application/JSON'];
const HOSTILE_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json;;;',
  'application/problem+json',
  'application/msgpack',
  'application/octet-stream',
  '*/*',
  'application/jsonx',
  'application/json, text/plain',
  `application/json; x=${'y'.repeat(4000)}`,
];

/**
 * Spellings of integers a URL must not accept (only decimal digits and a leading minus are
 * numbers) and integers just outside the ranges the service takes (int32 coordinates, exact
 * JSON integers), percent-encoded where they hold spaces or signs.
 */
const NUMERIC_EDGES = [
  '%20',
  '%201',
  '0x10',
  '1e3',
  '%2B5',
  '1.0',
  '-0',
  '00',
  '2147483648',
  '-2147483649',
  '9007199254740993',
  '1_000',
  '%D9%A3',
  'Infinity',
];

/** Path segments that are not ids at all, many of them deliberately broken percent-encoding. */
const JUNK_SEGMENTS = [
  ...NUMERIC_EDGES,
  '%',
  '%zz',
  '%00',
  '%ED%A0%80',
  '%C0%80',
  '%FF%FE',
  '%2e%2e%2f%2e%2e',
  '..',
  '%20',
  '%0d%0aX-Injected:%201',
  'a'.repeat(65),
  'x'.repeat(10_000),
  '%F0%9F%98%80',
  '__proto__',
  'constructor',
  ';',
  '00000000-0000-0000-0000-000000000000',
  'NULL',
  '-1',
];

const QUERY_KEYS = [
  'limit',
  'cursor',
  'before',
  'format',
  'direction',
  'state',
  '__proto__',
  'constructor',
  'a[b]',
  'x',
];
const QUERY_VALUES = [
  ...NUMERIC_EDGES,
  '',
  '-1',
  '0',
  '101',
  '1e308',
  'NaN',
  '%00',
  '%ED%A0%80',
  '%zz',
  '%',
  '&&',
  '==',
  'a'.repeat(5000),
];

const MALFORMED_BODIES: [string, () => string | Uint8Array][] = [
  ['open-brace', () => '{'],
  ['empty', () => ''],
  ['spaces', () => '   '],
  ['missing-value', () => '{"a":}'],
  ['single-quotes', () => "{'a':1}"],
  ['json-null', () => 'null'],
  ['json-array', () => '[]'],
  ['json-string', () => '"str"'],
  ['trailing-garbage', () => '{"a":1}}garbage'],
  ['bom-prefix', () => '\ufeff{}'],
  ['duplicate-keys', () => '{"a":1,"a":{"b":2},"a":"\\u0000"}'],
  ['raw-nul-in-string', () => '{"a":"x\u0000y"}'],
  ['escaped-lone-surrogate-key', () => '{"\\ud800":1}'],
  ['proto-text', () => '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'],
  ['invalid-utf8', () => Uint8Array.of(0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d)],
  ['overlong-nul-utf8', () => Uint8Array.of(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0x80, 0x22, 0x7d)],
  [
    'cesu-surrogate-utf8',
    () => Uint8Array.of(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d),
  ],
  ['nan-literal', () => '{"a":NaN}'],
  ['comment', () => '{/* c */"a":1}'],
  ['over-body-limit', () => `{"a":"${'z'.repeat(3 * 1024 * 1024)}"}`],
  ['deep-10k-text', () => `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
  ['nul-byte', () => '\u0000'],
];

/** `arbitrary` in one case out of `every`, null otherwise. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: 1, arbitrary }, { weight: every - 1, arbitrary: fc.constant(null) });
}

const OTHER_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE'];

function pathParamArbitrary(param: { name: string; schema: JsonSchema }, context: SchemaContext) {
  const known = context.dictionary[param.name] ?? [];
  return fc.oneof(
    ...(known.length
      ? [{ weight: 3, arbitrary: fc.constantFrom(...known).map((v) => ({ text: String(v), junk: false })) }]
      : []),
    { weight: 2, arbitrary: fc.uuid().map((v) => ({ text: v, junk: false })) },
    { weight: 1, arbitrary: fc.uuid().map((v) => ({ text: v.toUpperCase(), junk: false })) },
    {
      weight: 1,
      arbitrary: schemaArbitrary(param.schema, context).map((v) => ({
        text: encodeURIComponent(String(v)),
        junk: false,
      })),
    },
    { weight: 3, arbitrary: fc.constantFrom(...JUNK_SEGMENTS).map((v) => ({ text: v, junk: true })) },
  );
}

/**
 * A time key as a list cursor spells it (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) with any digits: mostly
 * impossible instants (month 13, day 45, hour 99), which pass a shape check and fail in SQL.
 */
const anyTimeKey = fc
  .tuple(
    fc.integer({ min: 0, max: 9999 }),
    ...Array.from({ length: 5 }, () => fc.integer({ min: 0, max: 99 })),
    fc.integer({ min: 0, max: 999_999 }),
  )
  .map(([year, ...rest]) => {
    const [month, day, hour, minute, second, micro] = rest.map((n) => String(n).padStart(2, '0'));
    return `${String(year).padStart(4, '0')}-${month}-${day}T${hour}:${minute}:${second}.${String(micro).padStart(6, '0')}Z`;
  });

/** Well-formed cursors (base64url JSON of a key) holding values no list gave out. */
const forgedCursor = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: anyTimeKey },
      { weight: 2, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
      { weight: 1, arbitrary: fc.integer() },
      { weight: 1, arbitrary: fc.double() },
      { weight: 1, arbitrary: fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -1, 0, 1e308, null) },
    ),
    { maxLength: 4 },
  )
  .map((key) => Buffer.from(JSON.stringify(key)).toString('base64url'));

const forgedCursorQuery = fc
  .tuple(fc.constantFrom('cursor', 'before'), forgedCursor)
  .map(([key, cursor]) => `${key}=${cursor}`);

const junkQuery = fc
  .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), fc.constantFrom(...QUERY_VALUES)), {
    minLength: 1,
    maxLength: 4,
  })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

/** The operation's declared query parameters, each present half the time with a generated value. */
function queryArbitrary(op: Operation, context: SchemaContext): fc.Arbitrary<string> {
  const parts = op.queryParams.map((p) =>
    fc.option(
      schemaArbitrary(p.schema, context, p.name).map(
        (value) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(value))}`,
      ),
      { nil: '', freq: 2 },
    ),
  );
  return fc.tuple(...parts).map((present) => present.filter(Boolean).join('&'));
}

function bodyArbitrary(
  op: Operation,
  context: SchemaContext,
): fc.Arbitrary<{ plan: BodyPlan; label: string; clean: boolean }> {
  const malformed = fc.constantFrom(...MALFORMED_BODIES).map(([label, build]) => ({
    plan: { kind: 'bytes', build } as BodyPlan,
    label: `body=${label}`,
    clean: false,
  }));
  const hostile = hostileValue.map((h) => ({
    plan: { kind: 'value', value: h } as BodyPlan,
    label: `body=${h.label}`,
    clean: false,
  }));
  if (!op.body) {
    return fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constant({ plan: { kind: 'none' } as BodyPlan, label: 'no-body', clean: true }),
      },
      { weight: 2, arbitrary: hostile },
      { weight: 1, arbitrary: malformed },
    );
  }
  const valid = schemaArbitrary(op.body, context);
  const truncated = fc.tuple(valid, fc.nat()).map(([value, cut]) => {
    const text = JSON.stringify(value);
    return {
      plan: { kind: 'bytes', build: () => text.slice(0, cut % Math.max(1, text.length)) } as BodyPlan,
      label: `body=truncated(${cut % Math.max(1, text.length)}/${text.length})`,
      clean: false,
    };
  });
  const mutatedBody = mutated(valid).map(({ value, label }) => ({
    plan: { kind: 'value', value } as BodyPlan,
    label: `body: ${label}`,
    clean: false,
  }));
  return fc.oneof(
    {
      weight: 4,
      arbitrary: valid.map((value) => ({
        plan: { kind: 'value', value } as BodyPlan,
        label: 'body=valid',
        clean: true,
      })),
    },
    { weight: 5, arbitrary: mutatedBody },
    { weight: 1, arbitrary: hostile },
    { weight: 1, arbitrary: truncated },
    { weight: 2, arbitrary: malformed },
  );
}

/** The generator of one operation's cases: valid-ish requests mixed with every kind of damage. */
export function restCaseArbitrary(op: Operation, context: SchemaContext): fc.Arbitrary<RestCase> {
  const params = fc.tuple(...op.pathParams.map((p) => pathParamArbitrary(p, context)));
  const internal = op.path.startsWith('/internal/');
  const auth = fc.oneof(
    { weight: 3, arbitrary: fc.constant({ kind: 'token' } as RestCase['auth']) },
    { weight: internal ? 4 : 1, arbitrary: fc.constant({ kind: 'server' } as RestCase['auth']) },
    { weight: 2, arbitrary: fc.constant({ kind: 'none' } as RestCase['auth']) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...BAD_AUTH).map((value) => ({ kind: 'bad', value }) as RestCase['auth']),
    },
  );
  return fc
    .record({
      method: fc.oneof(
        { weight: 12, arbitrary: fc.constant(op.method) },
        { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
      ),
      params,
      query: queryArbitrary(op, context),
      junkQuery: sometimes(fc.oneof(junkQuery, forgedCursorQuery), 6),
      body: bodyArbitrary(op, context),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...JSON_TYPES) },
        { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_TYPES) },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
      auth,
      raw: sometimes(fc.constantFrom(...RAW_MUTATIONS), 20),
      requestId: sometimes(fc.constantFrom('../../x', 'a'.repeat(200), 'ok-id_1.2:3'), 10),
      // Declared headers: mostly a valid value (a fresh key each case), sometimes one out of
      // schema, sometimes none.
      declaredHeaders: fc.tuple(
        ...op.headerParams.map((p) =>
          fc.oneof(
            { weight: 6, arbitrary: fc.uuid().map((v) => [p.name, v] as const) },
            {
              weight: 1,
              arbitrary: fc.constantFrom('', ' ', 'a'.repeat(300), 'a b').map((v) => [p.name, v] as const),
            },
            { weight: 1, arbitrary: fc.constant(null) },
          ),
        ),
      ),
    })
    .map((c) => {
      let path = op.path;
      c.params.forEach((value, i) => {
        path = path.replace(`{${op.pathParams[i]?.name}}`, value.text);
      });
      const query = [c.query, c.junkQuery ?? ''].filter(Boolean).join('&');
      const url = query ? `${path}?${query}` : path;
      const hasBody = c.body.plan.kind !== 'none';
      const headers: Record<string, string> = {};
      if (hasBody && c.contentType !== undefined) headers['content-type'] = c.contentType;
      if (c.requestId !== null) headers['x-request-id'] = c.requestId;
      for (const header of c.declaredHeaders) if (header !== null) headers[header[0]] = header[1];
      const junkUrl = c.junkQuery !== null || c.params.some((p) => p.junk);
      const labels = [
        c.body.label,
        ...(hasBody
          ? [`content-type=${c.contentType === undefined ? '(none)' : c.contentType.slice(0, 40)}`]
          : []),
        ...(c.auth.kind === 'bad' ? [`auth=${c.auth.value.slice(0, 30)}`] : [`auth=${c.auth.kind}`]),
        ...(c.raw === null ? [] : [`raw=${c.raw}`]),
      ];
      return {
        method: c.method,
        url,
        headers,
        auth: c.auth,
        body: c.body.plan,
        raw: c.raw ?? undefined,
        labels,
        clean:
          c.body.clean &&
          c.method === op.method &&
          !junkUrl &&
          c.raw === null &&
          (!hasBody || JSON_TYPES.includes(c.contentType ?? '')),
        htmlErrors: op.htmlErrors[c.method] ?? [],
      };
    });
}
