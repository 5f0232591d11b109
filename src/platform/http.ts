import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Config } from '../config.js';
import { AppError, ErrorCode, type FieldError, toProblem } from './errors.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';

export type HttpServer = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  Logger,
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

/**
 * The Fastify factory: zod validation (failures answer 422), RFC 9457 problem+json for every
 * error, request ids, metrics and the generated OpenAPI 3.1 document with its UI.
 */
export async function createHttpServer(deps: {
  config: Config;
  log: Logger;
  metrics: Metrics;
}): Promise<HttpServer> {
  const { config, log, metrics } = deps;
  const app = Fastify({
    loggerInstance: log,
    bodyLimit: config.HTTP_BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    return503OnClosing: true,
    logController: new QuietRequestLog(),
    // A client-supplied X-Request-Id is kept when it is short and plain, so traces join up across hops.
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.decorateRequest('user', null);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequestDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === ErrorCode.INTERNAL) request.log.error({ err: error }, 'unhandled error');
    return sendProblem(reply, appError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      new AppError(ErrorCode.ROUTE_NOT_FOUND, `No route ${request.method} ${request.url.split('?')[0]}.`),
    ),
  );

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Atrium API',
        version: '1.0.0',
        description:
          'REST API of Atrium, the social and world backend for multiplayer 3D-world platforms. ' +
          'Errors are RFC 9457 problem details with a stable `code`.',
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          serverToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'Per-spawn game server token, accepted on /internal only.',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  return app as unknown as HttpServer;
}

export function sendProblem(reply: FastifyReply, error: AppError) {
  const problem = toProblem(error);
  if (error.extra.retryAfterSeconds !== undefined)
    reply.header('retry-after', String(error.extra.retryAfterSeconds));
  return reply.code(problem.status).type('application/problem+json').send(problem);
}

/** Maps Fastify's own errors (body parsing, limits, schema validation) onto the AppError table. */
function toAppError(error: FastifyError): AppError {
  if (error instanceof AppError) return error;
  if (hasZodFastifySchemaValidationErrors(error) || error.validation) {
    const context = error.validationContext ?? 'body';
    const errors: FieldError[] = (error.validation ?? []).map((issue) => ({
      path: [context, ...issue.instancePath.split('/').filter(Boolean)].join('.'),
      message: issue.message ?? 'is invalid',
    }));
    return new AppError(ErrorCode.VALIDATION_FAILED, 'The request did not pass validation.', { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(ErrorCode.PAYLOAD_TOO_LARGE, 'The request body is over the size limit.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'The request content type is not supported.');
  }
  if (error.statusCode === 400 || error.code?.startsWith('FST_ERR_CTP')) {
    return new AppError(ErrorCode.MALFORMED_REQUEST, `The request is malformed: ${error.message}`);
  }
  if (error.statusCode === 413) return new AppError(ErrorCode.PAYLOAD_TOO_LARGE, error.message);
  return new AppError(ErrorCode.INTERNAL, 'An unexpected error occurred.');
}
