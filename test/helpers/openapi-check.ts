import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Checks HTTP exchanges against the OpenAPI document the service publishes, with Ajv (JSON Schema
 * 2020-12), which shares no code with the zod schemas the service validates and serializes with:
 * the status must be declared for the operation, the response's media type declared for that
 * status, a body sent where one is declared (but for HEAD) and none where none is, a JSON body must
 * match the declared schema, and a request the document refuses (body, path, query or header
 * parameters) must not succeed.
 */

export interface Exchange {
  method: string;
  /** Path and query string, as sent. */
  url: string;
  requestHeaders: Record<string, string | string[] | undefined>;
  requestBody: Buffer | undefined;
  status: number;
  responseHeaders: Record<string, string | string[] | number | undefined>;
  responseBody: Buffer;
}

interface MediaObject {
  schema?: unknown;
}
interface ResponseObject {
  content?: Record<string, MediaObject>;
}
interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: unknown;
}
interface OperationObject {
  operationId?: string;
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content: Record<string, MediaObject> };
  responses: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, unknown> };
}

export const COMPONENTS_ID = 'atrium:components';
/**
 * Refusals that come before any handler: malformed, URL or headers too long, or a body refused by
 * its type or size (the not-found route reads a body as every route does).
 */
const REFUSED_FIRST = [400, 413, 414, 415, 431];
/** What a path no route serves answers: 404, or a refusal first. */
const UNROUTED = [...REFUSED_FIRST, 404];
/** What a method the path does not serve answers: 405, or a refusal first. */
const UNDECLARED_METHOD = [...REFUSED_FIRST, 405];
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

interface Route {
  pattern: RegExp;
  names: string[];
  template: string;
  operations: Record<string, OperationObject>;
}

export class OpenApiCheck {
  // `format` is an annotation in JSON Schema 2020-12 unless a dialect asserts it; OpenAPI 3.1's does not.
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  private readonly routes: Route[];
  private readonly compiled = new Map<unknown, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    // The document's references point into its own components; Ajv resolves them in a schema of
    // their own, so that every schema of an operation compiles on its own.
    this.ajv.addSchema(
      relocated({ $id: COMPONENTS_ID, $defs: document.components?.schemas ?? {} }) as object,
      COMPONENTS_ID,
    );
    this.routes = Object.entries(document.paths)
      .map(([template, item]) => {
        const names: string[] = [];
        const source = template
          .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
          .replace(/\\?\{([^}]+)\\?\}/g, (_m, name) => {
            names.push(name);
            // A parameter is never empty: the service answers `/api/users//following` as a path
            // it does not serve (404), as the document says.
            return '([^/]+)';
          });
        return { pattern: new RegExp(`^${source}$`), names, template, operations: item };
      })
      // Literal segments win over parameters, as in the service's router.
      .sort((a, b) => a.names.length - b.names.length);
  }

  /** What is wrong with one exchange, as sentences naming it; empty when nothing is. */
  check(exchange: Exchange): string[] {
    // A request target may be in absolute form (`GET http://host/path`); the router reads the path.
    const target = exchange.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?]*/i, '');
    const [path = '', query = ''] = splitOnce(target, '?');
    const method = exchange.method.toLowerCase();
    // The router prefers literal segments, among the paths serving the method.
    const matching = this.routes.filter((candidate) => candidate.pattern.test(path));
    const route = matching.find((candidate) => candidate.operations[method]) ?? matching[0];
    const match = route ? route.pattern.exec(path) : null;
    // A path the document does not know is answered 404, or refused before routing.
    if (!route || !match) {
      return UNROUTED.includes(exchange.status)
        ? []
        : [`${exchange.method} ${path} -> ${exchange.status}: the document describes no such path`];
    }
    const operation = route.operations[method];
    const name = `${exchange.method} ${route.template} -> ${exchange.status}`;
    if (!operation || !HTTP_METHODS.includes(method)) {
      return UNDECLARED_METHOD.includes(exchange.status)
        ? []
        : [`${name}: the document has no ${method} operation on this path`];
    }
    // The router's own answer where its match of the URL differs from the template's.
    if (exchange.status === 405) return [];
    const problems = this.checkResponse(operation, exchange);
    if (exchange.status < 300) {
      const params = Object.fromEntries(
        route.names.map((key, i) => [key, decodedSegment(match[i + 1] ?? '')]),
      );
      problems.push(...this.requestProblems(operation, exchange, params, new URLSearchParams(query)));
    }
    return problems.map((problem) => `${name}: ${problem}`);
  }

  private checkResponse(operation: OperationObject, exchange: Exchange): string[] {
    const declared =
      operation.responses[String(exchange.status)] ??
      operation.responses[`${String(exchange.status)[0]}XX`] ??
      operation.responses.default;
    if (!declared) return [`status ${exchange.status} is not declared`];
    const mediaType = mediaTypeOf(exchange.responseHeaders['content-type']);
    const content = declared.content ?? {};
    if (exchange.responseBody.length === 0 && (mediaType === undefined || exchange.method === 'HEAD')) {
      // HEAD answers without the body GET would send; anything else declared with a body must send
      // one: a JSON null, say, is four bytes, not none.
      if (exchange.method === 'HEAD' || Object.keys(content).length === 0) return [];
      return [`the document declares a body (${Object.keys(content).join(', ')}) the service did not send`];
    }
    const media = mediaType === undefined ? undefined : content[mediaType];
    if (!media) {
      return [
        `media type ${mediaType ?? '(none)'} is not declared (declared: ${Object.keys(content).join(', ') || 'no body'})`,
      ];
    }
    if (exchange.method === 'HEAD' || !mediaType || !isJson(mediaType) || media.schema === undefined)
      return [];
    let body: unknown;
    try {
      body = JSON.parse(exchange.responseBody.toString('utf8'));
    } catch {
      return [`the ${mediaType} body is not JSON`];
    }
    return this.schemaProblems(media.schema, body, 'response body');
  }

  private requestProblems(
    operation: OperationObject,
    exchange: Exchange,
    params: Record<string, string>,
    query: URLSearchParams,
  ): string[] {
    const problems: string[] = [];
    for (const parameter of operation.parameters ?? []) {
      const value =
        parameter.in === 'path'
          ? params[parameter.name]
          : parameter.in === 'query'
            ? queryValue(parameter.schema, query.getAll(parameter.name))
            : parameter.in === 'header'
              ? headerValue(exchange.requestHeaders[parameter.name.toLowerCase()])
              : undefined;
      if (value === undefined) {
        if (parameter.required)
          problems.push(`the request lacks the required ${parameter.in} parameter ${parameter.name}`);
        continue;
      }
      if (parameter.schema !== undefined) {
        const typed = Array.isArray(value)
          ? value.map((item) => parameterValue(itemsOf(parameter.schema), item))
          : parameterValue(parameter.schema, value);
        problems.push(
          ...this.schemaProblems(parameter.schema, typed, `${parameter.in} parameter ${parameter.name}`),
        );
      }
    }
    const body = exchange.requestBody;
    const requestBody = operation.requestBody;
    if (!body || body.length === 0) {
      if (requestBody?.required) problems.push('the request has no body, which the document requires');
      return problems;
    }
    // A body sent where none is declared has no meaning, and the service does not read it.
    if (!requestBody) return problems;
    const mediaType = mediaTypeOf(exchange.requestHeaders['content-type']);
    const media = mediaType === undefined ? undefined : requestBody.content[mediaType];
    if (!media) return [...problems, `the request's media type ${mediaType ?? '(none)'} is not declared`];
    if (!mediaType || !isJson(mediaType) || media.schema === undefined) return problems;
    let parsed: unknown;
    try {
      // The service's JSON parser accepts a leading byte order mark.
      parsed = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''));
    } catch {
      return [...problems, 'the request body is not JSON'];
    }
    return [...problems, ...this.schemaProblems(media.schema, parsed, 'request body')];
  }

  private schemaProblems(schema: unknown, value: unknown, what: string): string[] {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(relocated(schema) as object);
      this.compiled.set(schema, validate);
    }
    if (validate(value)) return [];
    return [
      `the ${what} does not match the document's schema: ${this.ajv.errorsText(validate.errors, { dataVar: what.split(' ').at(-1) })}`,
    ];
  }
}

/** The schema with its references to the document's components pointed at the components schema. */
export function relocated(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS_ID}#/$defs/`));
}

/** A query parameter: its values when the schema is an array (`?tag=a&tag=b`), else the first. */
function queryValue(schema: unknown, values: string[]): string | string[] | undefined {
  if ([(schema as { type?: string | string[] } | undefined)?.type ?? []].flat().includes('array')) {
    return values.length > 0 ? values : undefined;
  }
  return values[0];
}

function itemsOf(schema: unknown): unknown {
  return (schema as { items?: unknown }).items ?? {};
}

/** Path and query values are text; a parameter declared as a number or boolean is read as one. */
function parameterValue(schema: unknown, value: string): unknown {
  const types = [(schema as { type?: string | string[] }).type ?? []].flat();
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(value))
    return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

function mediaTypeOf(header: string | string[] | number | undefined): string | undefined {
  const value = headerValue(header);
  return value?.split(';')[0]?.trim().toLowerCase() || undefined;
}

function headerValue(header: string | string[] | number | undefined): string | undefined {
  return header === undefined ? undefined : Array.isArray(header) ? header.join(', ') : String(header);
}

function isJson(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** A path segment as the router hands it over; one that does not decode is kept as sent. */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, ''] : [text.slice(0, at), text.slice(at + 1)];
}
