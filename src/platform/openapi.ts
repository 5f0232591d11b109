import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import type { FastifySchema } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorDescriptions, PROBLEM_MEDIA_TYPE } from './http-schemas.js';

/**
 * How the OpenAPI document is made from the routes, so that it says what the service does: error
 * answers as application/problem+json, bodies in the media types a route really reads and writes,
 * every status a route can answer, and HEAD and OPTIONS where Fastify answers them.
 */

/** Bodies by media type, each described by a zod schema (of the decoded value, for msgpack). */
export type MediaSchemas = Record<string, z.ZodType>;

/**
 * A response whose body is not (only) JSON: the route's `response` entry for a status, listing
 * each media type. Fastify picks a serializer by the reply's type; a Buffer, stream or pre-encoded
 * string goes out as it is.
 */
export function mediaResponse(description: string, content: MediaSchemas) {
  return {
    description,
    content: Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema }])),
  };
}

/** A body of raw bytes in a media type (JSON Schema 2020-12's contentMediaType says which). */
export function bytesOf(mediaType: string, description: string): z.ZodType {
  return z.string().meta({ contentMediaType: mediaType, description });
}

/**
 * Route schema key for the request bodies of a route that reads its body itself (codec bytes,
 * msgpack): documentation only, Fastify does not validate it.
 */
export const DOCUMENTED_BODIES = 'documentedBodies';

/**
 * Route schema key marking a JSON body the route reads as `{}` when it is left out: @fastify/swagger
 * declares every body required, and the document transform says this one is not.
 */
export const OPTIONAL_BODY = 'x-optional-body';

/** The path of the API reference page (Swagger UI). */
export const DOCS_PATH = '/docs';

/** The route schema of `GET /openapi.json`. */
export const openApiDocument = {
  operationId: 'openapi.document',
  tags: ['documentation'],
  summary: 'This OpenAPI 3.1 document.',
  security: [],
  response: {
    200: z
      .looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.record(z.string(), z.unknown()) })
      .describe('The OpenAPI document.'),
  },
};

/** The route schema of the reference page, which loads its scripts from under DOCS_PATH. */
export const documentationPage = {
  operationId: 'openapi.page',
  tags: ['documentation'],
  summary: 'The API reference: this document rendered by Swagger UI.',
  security: [],
  response: { 200: mediaResponse('An HTML page.', { 'text/html': z.string() }) },
};

/** Statuses any route can answer: a malformed request, an oversized body, URL or header, a lost dependency. */
const EVERY_ROUTE = [400, 413, 414, 415, 431, 503];

type RouteSchema = Record<string, unknown> & {
  response?: Record<string, unknown>;
  security?: unknown[];
  [DOCUMENTED_BODIES]?: MediaSchemas;
};
type MediaEntry = { description: string; content: Record<string, { schema: z.ZodType }> };
type DocumentedResponse = {
  description: string;
  content?: Record<string, { schema: unknown }>;
  type?: 'null';
};

function isMediaEntry(entry: unknown): entry is MediaEntry {
  return typeof entry === 'object' && entry !== null && 'content' in entry;
}

/**
 * The route transform: zod schemas become JSON Schema (fastify-type-provider-zod), then each
 * status gets its media types. Statuses follow from the route: 401 where it needs credentials,
 * 422 where it validates input, those of EVERY_ROUTE, besides the ones it declares.
 */
export const documentRoute: SwaggerTransform = (input) => {
  const schema = input.schema as RouteSchema | undefined;
  if (!schema || schema.hide) return jsonSchemaTransform(input);
  // A prefixed plugin's root answers with and without the trailing slash; the document names the bare one.
  const url = input.url.length > 1 && input.url.endsWith('/') ? input.url.slice(0, -1) : input.url;
  const { response = {}, [DOCUMENTED_BODIES]: bodies, ...rest } = schema;
  const zodResponses: Record<string, unknown> = {};
  const mediaResponses: Record<string, MediaEntry> = {};
  for (const [status, entry] of Object.entries(response)) {
    if (isMediaEntry(entry)) mediaResponses[status] = entry;
    else zodResponses[status] = entry;
  }
  const toJson = (zod: z.ZodType, io: 'input' | 'output'): unknown => {
    const converted = jsonSchemaTransform({
      ...input,
      schema: io === 'input' ? { body: zod } : { response: { 200: zod } },
    } as Parameters<SwaggerTransform>[0]).schema as { body?: unknown; response?: Record<string, unknown> };
    return bare(io === 'input' ? converted.body : converted.response?.[200]);
  };

  const transformed = jsonSchemaTransform({
    ...input,
    schema: { ...rest, response: zodResponses },
  } as Parameters<SwaggerTransform>[0]);
  const out = transformed.schema as RouteSchema;
  const responses: Record<string, DocumentedResponse> = {};
  for (const [status, converted] of Object.entries(out.response ?? {})) {
    const json = bare(converted);
    // A range ('4xx': a hook's refusal) is documented under OpenAPI's spelling of it, '4XX'.
    const range = /^[1-5]xx$/.test(status);
    const code = range ? Number(status[0]) * 100 : Number(status);
    const description = range
      ? "A hook's refusal, with a status and a code of its own."
      : code >= 400
        ? errorDescription(code)
        : ((json as { description?: string }).description ?? 'Success.');
    // A response without a body is declared as `null` (z.null()): a 204, a redirect, a 304.
    // @fastify/swagger writes no content for a response of type null, and a media type for any
    // other, even one with no schema.
    responses[range ? status.toUpperCase() : status] =
      (json as { type?: string }).type === 'null'
        ? { description, type: 'null' }
        : {
            description,
            content: { [code >= 400 ? PROBLEM_MEDIA_TYPE : 'application/json']: { schema: json } },
          };
  }
  for (const [status, entry] of Object.entries(mediaResponses)) {
    responses[status] = {
      description: entry.description,
      content: Object.fromEntries(
        Object.entries(entry.content).map(([type, media]) => [
          type,
          { schema: toJson(media.schema, 'output') },
        ]),
      ),
    };
  }
  const derived = [
    ...EVERY_ROUTE,
    ...((schema.security?.length ?? 0) > 0 ? [401] : []),
    ...(rest.params || rest.querystring || rest.body || rest.headers || bodies ? [422] : []),
  ];
  for (const status of derived) responses[status] ??= problemResponse(status);
  out.response = responses;
  if (bodies) {
    out.body = {
      content: Object.fromEntries(
        Object.entries(bodies).map(([type, zod]) => [type, { schema: toJson(zod, 'input') }]),
      ),
    };
  }
  return { schema: out as FastifySchema, url };
};

/**
 * A converted schema without the `$id` placeholder and `$schema` the provider writes into a
 * schema that is not an object (they would make a document inside the document).
 */
function bare(json: unknown): Record<string, unknown> {
  const { $id: _id, $schema: _schema, ...rest } = (json ?? {}) as Record<string, unknown>;
  return rest;
}

/** An error status answered with the Problem schema. */
function problemResponse(status: number): DocumentedResponse {
  return {
    description: errorDescription(status),
    content: { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

function errorDescription(status: number): string {
  return errorDescriptions[status] ?? 'Error.';
}

/**
 * The document transform: the registered zod schemas as components, without the variants nothing
 * uses and without the `$id` and `$schema` zod writes into each (JSON Schema 2020-12 forbids a
 * fragment in `$id`); bodies declared `rest.optionalBody` not required (optionalBody);
 * then HEAD beside every GET and OPTIONS on every path, which Fastify and the not-found handler
 * answer (src/platform/http-errors.ts).
 */
export const documentObject: SwaggerTransformObject = (input) => {
  const document = jsonSchemaTransformObject(input) as ReturnType<typeof jsonSchemaTransformObject> & {
    components?: { schemas?: Record<string, Record<string, unknown>> };
    paths?: Record<string, Record<string, Operation>>;
  };
  const schemas = document.components?.schemas;
  if (schemas) dropUnusedVariants(document, schemas);
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const operation of Object.values<Operation>(item)) optionalBody(operation);
    addHeadAndOptions(path, item);
  }
  return document;
};

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  parameters?: { in: string; name: string; required?: boolean; schema?: unknown }[];
  security?: unknown[];
  responses?: Record<string, DocumentedResponse>;
  requestBody?: { required?: boolean };
  [OPTIONAL_BODY]?: boolean;
}

/** A body marked OPTIONAL_BODY is declared not required, and the mark (copied as an extension) goes. */
function optionalBody(operation: Operation): void {
  if (!operation[OPTIONAL_BODY]) return;
  delete operation[OPTIONAL_BODY];
  if (operation.requestBody) operation.requestBody.required = false;
}

function addHeadAndOptions(path: string, item: Record<string, Operation>): void {
  const get = item.get;
  if (get) {
    item.head = {
      ...get,
      operationId: `${get.operationId}.head`,
      summary: `The headers GET ${path} would answer, without its body.`,
      responses: Object.fromEntries(
        Object.entries(get.responses ?? {}).map(([status, response]) => [
          status,
          { description: response.description },
        ]),
      ),
    };
  }
  const named = Object.values(item)
    .map((operation) => operation.operationId)
    .filter((id): id is string => id !== undefined)
    .sort();
  item.options = {
    operationId: `${named[0] ?? path}.options`,
    summary: `The methods ${path} accepts, in the Allow header.`,
    tags: ['http'],
    // The not-found handler answers OPTIONS before anything reads the path's parameters.
    parameters: pathParameterNames(path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    })),
    security: [],
    responses: {
      204: {
        description: 'No content; the Allow header lists the methods.',
        headers: { allow: { schema: { type: 'string' } } },
      } as DocumentedResponse,
      ...Object.fromEntries(
        // Refused before routing, or a body it does not read; 404 where no route serves the URL.
        [400, 404, 413, 414, 415, 431].map((status) => [status, problemResponse(status)]),
      ),
    },
  };
}

function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);
}

/**
 * fastify-type-provider-zod writes every zod schema registered with an id twice, `X` as responses
 * are written and `XInput` as requests are read, whether or not any route reads or writes it that
 * way. This drops a variant nothing references when its twin is referenced (Problem appears in
 * responses only, so ProblemInput goes), and keeps both when neither is, so `npm run lint` still
 * reports a registered schema that no route uses.
 */
function dropUnusedVariants(document: object, schemas: Record<string, Record<string, unknown>>): void {
  // The schemas the operations reference, then the schemas those reference, and so on.
  const referenced = new Set<string>();
  const collect = (value: unknown) => {
    // undefined for a dangling reference, which the lint reports.
    const json = JSON.stringify(value, (_key, nested) => (nested === schemas ? undefined : nested)) ?? '';
    for (const [, name = ''] of json.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      if (referenced.has(name)) continue;
      referenced.add(name);
      collect(schemas[name]);
    }
  };
  collect(document);
  const twin = (name: string) => (name.endsWith('Input') ? name.slice(0, -'Input'.length) : `${name}Input`);
  for (const [name, schema] of Object.entries(schemas)) {
    if (!referenced.has(name) && referenced.has(twin(name))) delete schemas[name];
    else {
      // Each comes out as a document of its own; in the document it is a subschema.
      delete schema.$id;
      delete schema.$schema;
    }
  }
}
