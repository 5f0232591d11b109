import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type fastJsonType from 'fast-json-stringify';
import type { Schema } from 'fast-json-stringify';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySerializerCompiler,
  type FastifyServerOptions,
  type HTTPMethods,
  LogController,
  type onResponseHookHandler,
} from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { serviceTokenScheme } from '../../protocol/operation.js';
import { registerDocsPage } from './docs-page.js';
import { AppError, DEPENDENCY_RETRY_AFTER_SECONDS, ErrorCode } from './errors.js';
import type { HistogramChild } from './hot-histogram.js';
import {
  clientErrorHandler,
  errorHandler,
  frameworkErrorHandler,
  hasEmptyParam,
  notFoundHandler,
  sendProblem,
  sendRouteNotFound,
} from './http-errors.js';
import { LingeringClose } from './http-linger.js';
import { fastifyTrustProxy } from './http-proxy.js';
import { InFlight } from './in-flight.js';
import { registerLazyOpenApi } from './lazy-openapi.js';
import { LazyChildLogger, type Logger } from './log.js';
import type { Metrics } from './metrics.js';
import { DOCS_PATH, documentationPage, documentObject, documentRoute, openApiDocument } from './openapi.js';
import type { PlatformConfig } from './platform-config.js';

export type HttpServer = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/**
 * Per-request log lines cost measurable throughput at info level, and /metrics already counts
 * requests and latencies, so they are written at debug; failed requests stay at error.
 */
class QuietRequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) reply.log.error({ err: error, responseTime: reply.elapsedTime }, 'request errored');
    else request.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** A path parameter longer than this is refused with 414 before any handler (Fastify's default). */
const MAX_PATH_PARAM_LENGTH = 100;

/**
 * The Fastify factory: zod validation (failures answer 422), RFC 9457 problem+json for every
 * error, request ids, metrics and the generated OpenAPI 3.1 document with its UI.
 */
export async function createHttpServer(deps: {
  config: Pick<PlatformConfig, 'HTTP_BODY_LIMIT_BYTES' | 'TRUST_PROXY'>;
  log: Logger;
  metrics: Metrics;
  /** Where requests count from their first hook to their answer; the node's, which shutdown waits for. */
  inFlight?: InFlight;
}): Promise<HttpServer> {
  const { config, log, metrics, inFlight = new InFlight() } = deps;
  const lingering = new LingeringClose();
  const answerError = errorHandler(lingering);
  const app = Fastify({
    loggerInstance: log,
    bodyLimit: config.HTTP_BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    trustProxy: fastifyTrustProxy(config.TRUST_PROXY),
    // Fastify's own 503 while closing is plain JSON; the onRequest hook answers a problem instead.
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler(answerError),
    clientErrorHandler: clientErrorHandler(log, lingering),
    // JSON.parse makes a `__proto__` key an own property with no prototype effect; user documents
    // store it verbatim, and every other body's zod schema drops or refuses unknown keys.
    onProtoPoisoning: 'ignore',
    logController: new QuietRequestLog(),
    // The service's compilers (zod's validator, the lazy serializer below), given as the factories
    // Fastify builds every route's compilers with: without them it loads its ajv and
    // fast-json-stringify compilers when it starts, so a process that answered nothing has loaded
    // neither (docs/performance.md, "Process memory").
    schemaController: { compilersFactory: zodCompilersFactory },
    // Fastify hands over the pino child it made of loggerInstance; a route with its own log level gets a real child.
    childLoggerFactory: (logger, bindings, options) =>
      options.level ? logger.child(bindings, options) : new LazyChildLogger(logger as Logger, bindings),
    // A client-supplied X-Request-Id is kept when it is short and plain, so traces join up across hops.
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.decorateRequest('user', null);
  app.decorateRequest('service', null);

  // Callback-style hooks: on a cheap route the promise of an async hook is a measurable cost.
  let closing = false;
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (hasEmptyParam(request.params))
      return sendRouteNotFound(reply, request.method, request.url.split('?')[0] ?? '/');
    if (!closing) {
      inFlight.begin(request, () => `${request.method} ${request.routeOptions.url ?? '(no route)'}`);
      return done();
    }
    reply.header('connection', 'close');
    sendProblem(
      reply,
      new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The service is shutting down; retry on another node.', {
        retryAfterSeconds: DEPENDENCY_RETRY_AFTER_SECONDS,
      }),
    );
  });
  // The methods some route uses, for the Allow header of a 405.
  const routeMethods = new Set<HTTPMethods>();
  // Each route records its own durations under the pattern it was added with (request.routeOptions
  // would build an object per request to say it); the app-wide hook covers unmatched URLs only.
  const durationsOf = durationRecorder(metrics);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routeMethods.add(method);
    const record = durationsOf(route.url);
    const onResponse: onResponseHookHandler = (request, reply, done) => {
      record(request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = [...hookList(route.onResponse), onResponse];
  });
  // A request's work is over once its answer is sent, error answers included. A client that left
  // does not end it: the handler runs on, and onResponse never comes, but onSend does.
  app.addHook('onSend', (request, _reply, payload, done) => {
    inFlight.end(request);
    done(null, payload);
  });
  // Unless its client left before its body was read (while an onRequest hook awaited): the
  // request stream was destroyed then, and Fastify would wait for its body forever, the request
  // counted as running until shutdown gave up on it. It has no handler to run; it ends here.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.raw.destroyed) {
      reply.hijack();
      inFlight.end(request);
    }
    done(null, payload);
  });
  const recordUnmatched = durationsOf('unmatched');
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) recordUnmatched(request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler(answerError);
  app.setNotFoundHandler(
    notFoundHandler(
      (path) =>
        [...routeMethods].filter((method) => {
          const route = app.findRoute({ method, url: path });
          return route !== null && !hasEmptyParam(route.params);
        }),
      MAX_PATH_PARAM_LENGTH,
    ),
  );
  app.addHook('preClose', (done) => {
    closing = true;
    lingering.destroyAll();
    done();
  });

  // The document's builder loads on its first use (lazy-openapi.ts), as @fastify/swagger answers it.
  registerLazyOpenApi(app as unknown as FastifyInstance, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Atrium API',
        version: '1.0.0',
        description:
          'REST API of Atrium, the social and world backend for multiplayer 3D-world platforms. ' +
          'Errors are RFC 9457 problem details with a stable `code`.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // The service serves its own document, so paths are relative to wherever it was fetched from.
      servers: [{ url: '/', description: 'The service that served this document.' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          [serviceTokenScheme.name]: {
            type: 'http',
            scheme: 'bearer',
            description: serviceTokenScheme.description,
          },
        },
      },
    },
    transform: documentRoute,
    transformObject: documentObject,
  });
  // The reference page's routes are hidden, as the UI plugin's are; the page itself is described.
  app.addHook('onRoute', (route) => {
    if (route.url === DOCS_PATH && route.method === 'GET') route.schema = documentationPage;
  });
  // Swagger UI loads on the page's first request (docs-page.ts).
  registerDocsPage(app as unknown as FastifyInstance, (options) =>
    options?.yaml ? app.swagger({ yaml: true }) : app.swagger(),
  );
  app.get(
    '/openapi.json',
    { schema: openApiDocument },
    // The plugin's document type and the route's loose schema describe one object.
    async () => app.swagger() as unknown as z.input<(typeof openApiDocument.response)[200]>,
  );

  return app as unknown as HttpServer;
}

/**
 * Compiles each zod response schema, once, into a fast-json-stringify function. Like the zod
 * serializer it writes only the declared fields (unknown keys only where the schema keeps them),
 * but it does not re-validate every response, which cost a cheap route a tenth of its time. The
 * functions are pure, so routes answering with one schema share one, as do the servers of a
 * process that builds several (the test suite): compiling is most of what building a server costs.
 * A schema is compiled on its first response, not when its route is added: the generated code of
 * every route's serializers (114 functions, about 0.9 MiB of source text alone) stayed in the heap
 * of every process, most of them for routes it never answers (docs/performance.md, "Process memory
 * and start time").
 */
const compiledSerializers = new WeakMap<z.ZodType, (value: unknown) => string>();
/**
 * fast-json-stringify, loaded with the first serializer compiled: it brings ajv, ajv-formats and
 * fast-uri (about 0.6 MiB of source text), which a process that answered nothing yet does not
 * need. CommonJS, so loaded synchronously, inside the first response's serialization.
 */
let fastJson: typeof fastJsonType | undefined;
const loadFastJson = () => {
  fastJson ??= createRequire(import.meta.url)('fast-json-stringify') as typeof fastJsonType;
  return fastJson;
};
const fastSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) => {
  let serialize = compiledSerializers.get(schema);
  if (!serialize) {
    let compiled: ((value: unknown) => string) | undefined;
    serialize = (value) => {
      compiled ??= loadFastJson()(
        z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Schema,
      );
      return compiled(value);
    };
    compiledSerializers.set(schema, serialize);
  }
  return serialize;
};

/** The factories of the two compilers, typed by Fastify for ajv's schemas; these take zod's. */
const zodCompilersFactory = {
  buildValidator: () => validatorCompiler,
  buildSerializer: () => fastSerializerCompiler,
} as unknown as NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/**
 * Records a route's request durations through one histogram child per method and status, looked
 * up by two map reads instead of building and hashing a label set per request.
 */
function durationRecorder(metrics: Metrics) {
  return (route: string) => {
    const children = new Map<string, Map<number, HistogramChild>>();
    return (method: string, status: number, seconds: number) => {
      let byStatus = children.get(method);
      if (!byStatus) {
        byStatus = new Map();
        children.set(method, byStatus);
      }
      let child = byStatus.get(status);
      if (!child) {
        child = metrics.httpRequestDuration.child({ method, route, status: String(status) });
        byStatus.set(status, child);
      }
      child.observe(seconds);
    };
  };
}

/** A route option's hooks (one, a list or none) as a list, so a hook can be added to them. */
export function hookList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}
