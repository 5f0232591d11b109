import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, asAppError, ErrorCode, type FieldError, toProblem } from './errors.js';
import type { LingeringClose } from './http-linger.js';
import type { Logger } from './log.js';

type WarnLog = NonNullable<Parameters<typeof asAppError>[1]>;

/** Sends an AppError as problem+json, with Retry-After when the error says how long to wait. */
export function sendProblem(reply: FastifyReply, error: AppError) {
  const problem = toProblem(error);
  if (error.extra.retryAfterSeconds !== undefined)
    reply.header('retry-after', String(error.extra.retryAfterSeconds));
  return reply.code(problem.status).type('application/problem+json').send(problem);
}

/**
 * Maps Fastify's own errors (body parsing, limits, schema validation, bad URLs) onto the AppError
 * table; anything else goes through `asAppError`, which tells dependency failures from bugs.
 */
export function toAppError(error: FastifyError, log: WarnLog): AppError {
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
    case 'FST_ERR_BAD_URL':
      return new AppError(
        ErrorCode.MALFORMED_REQUEST,
        'The request path is not valid percent-encoded UTF-8.',
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return segmentTooLong();
  }
  if (error.statusCode === 400 || error.code?.startsWith('FST_ERR_CTP')) {
    return new AppError(ErrorCode.MALFORMED_REQUEST, `The request is malformed: ${error.message}`);
  }
  if (error.statusCode === 413) return new AppError(ErrorCode.PAYLOAD_TOO_LARGE, error.message);
  return asAppError(error, log);
}

/**
 * The error handler: every error as problem+json, unexpected failures logged with their cause.
 * Fastify answers a body it stopped reading (over the limit, or unparsable) with
 * `Connection: close`; the rest of that body is still on its way, so the close lingers.
 */
export function errorHandler(lingering: LingeringClose) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const appError = toAppError(error, request.log);
    if (appError.code === ErrorCode.INTERNAL) request.log.error({ err: error }, 'unhandled error');
    if (!request.raw.complete && reply.getHeader('connection') === 'close')
      lingering.afterResponse(request.raw.socket);
    return sendProblem(reply, appError);
  };
}

/**
 * Fastify's `frameworkErrors`: errors raised before a request reaches routing (a path that does
 * not decode, a path parameter over `maxParamLength`). They skip the onRequest hooks, so the
 * request id is set here before the error handler answers.
 */
export function frameworkErrorHandler(answer: ReturnType<typeof errorHandler>) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-request-id', request.id);
    answer(error, request, reply);
  };
}

/**
 * Whether a route matched with an empty path parameter (`/api/users//followers`, or a trailing
 * slash where an id goes). The router accepts an empty value, but no path of the API has one: such
 * a URL is not a path the service serves, and answers 404 ROUTE_NOT_FOUND under every method, as
 * the OpenAPI document and any router reading it say. A wildcard's rest (`*`) may be empty.
 */
export function hasEmptyParam(params: unknown): boolean {
  for (const [name, value] of Object.entries(params as Record<string, string>))
    if (value === '' && name !== '*') return true;
  return false;
}

/** The answer to a path no route serves. */
export function sendRouteNotFound(reply: FastifyReply, method: string, path: string) {
  return sendProblem(reply, new AppError(ErrorCode.ROUTE_NOT_FOUND, `No route ${method} ${path}.`));
}

const segmentTooLong = () =>
  new AppError(ErrorCode.URI_TOO_LONG, 'A segment of the request path is over the length limit.');

/**
 * The not-found handler. A path that routes serve under other methods (`methodsAt` asks the
 * router, which must not count a match with an empty parameter) answers 405 with `Allow`, and
 * OPTIONS on it answers 204 with the same `Allow`; HEAD is listed wherever GET is, as Fastify adds
 * it. A path no route serves answers 404, and so does one whose route for the method found nothing
 * there.
 */
export function notFoundHandler(methodsAt: (path: string) => string[], maxParamLength: number) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = methodsAt(path);
    const notFound = () => sendRouteNotFound(reply, request.method, path);
    if (allowed.length === 0) return notFound();
    // The router also matches a path whose parameter is over its length limit, under every method
    // it serves, only to refuse it (FST_ERR_MAX_PARAM_LENGTH): no method serves such a path.
    if (path.split('/').some((segment) => segment.length > maxParamLength)) {
      return sendProblem(reply, segmentTooLong());
    }
    // A route serving this method found nothing at the path and handed over (reply.callNotFound(),
    // as the reference page's static files do for a file they do not have).
    if (allowed.includes(request.method)) return notFound();
    const allow = [...new Set([...allowed, 'OPTIONS'])].sort().join(', ');
    reply.header('allow', allow);
    if (request.method === 'OPTIONS') return reply.code(204).send();
    return sendProblem(
      reply,
      new AppError(
        ErrorCode.METHOD_NOT_ALLOWED,
        `${path} does not accept ${request.method}; it accepts ${allow}.`,
      ),
    );
  };
}

/** The parts of Node's parse error a client error handler reads; `rawPacket` is the chunk being parsed. */
interface ParseError {
  code?: string;
  bytesParsed?: number;
  rawPacket?: unknown;
}

/** A request line still being read: a method, a space and a target with no space after it yet. */
const REQUEST_LINE_IN_PROGRESS = /^[A-Z][A-Z-]* \S*$/;

/**
 * Node's parser reports a URL too long for `maxHeaderSize` and too many header bytes alike. The URL
 * is to blame when the bytes parsed before the overflow, since the last line break, are an
 * unfinished request line; when the request line began in an earlier read that cannot be seen
 * any more, the overflow is reported as a header overflow.
 */
function headerOverflowCode(error: ParseError): ErrorCode {
  if (!Buffer.isBuffer(error.rawPacket)) return ErrorCode.HEADERS_TOO_LARGE;
  const parsed = error.rawPacket.subarray(0, error.bytesParsed ?? error.rawPacket.length);
  const lineStart = parsed.lastIndexOf(0x0a) + 1;
  const line = parsed.subarray(lineStart).toString('latin1');
  return REQUEST_LINE_IN_PROGRESS.test(line) ? ErrorCode.URI_TOO_LONG : ErrorCode.HEADERS_TOO_LARGE;
}

/** A complete HTTP/1.1 response for a raw socket, with a problem+json body and `Connection: close`. */
function rawProblemResponse(error: AppError): string {
  const problem = toProblem(error);
  const body = JSON.stringify(problem);
  return (
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\n` +
    'Content-Type: application/problem+json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** The in-flight response Node keeps on a server socket; once its head is written nothing else may be. */
interface ServerSocket extends Socket {
  _httpMessage?: { headersSent: boolean } | null;
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request: header fields or a URL
 * over `maxHeaderSize` (431 / 414), a request that is not HTTP (400), headers that never finish
 * (408). The answer is written to the socket as bytes, then the connection lingers so the client
 * can read it. Node may report several errors for one socket; only the first is answered.
 */
export function clientErrorHandler(log: Logger, lingering: LingeringClose) {
  return (error: ParseError, socket: ServerSocket): void => {
    if (socket.destroyed || socket.writableEnded) return;
    if (error.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    // The error carries the raw bytes read so far, which are not worth a log line of their own.
    log.debug({ code: error.code }, 'client error');
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // A client too slow to finish its headers gets no lingering: it has little left to send.
      socket.write('HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      socket.destroySoon();
      return;
    }
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      const code = headerOverflowCode(error);
      const message =
        code === ErrorCode.URI_TOO_LONG
          ? 'The request URL is over the length limit.'
          : 'The request header fields are over the size limit.';
      socket.write(rawProblemResponse(new AppError(code, message)));
    } else {
      socket.write(
        rawProblemResponse(new AppError(ErrorCode.MALFORMED_REQUEST, 'The request is not valid HTTP.')),
      );
    }
    lingering.start(socket);
  };
}
