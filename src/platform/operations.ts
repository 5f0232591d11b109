import type { FastifyReply, FastifyRequest, FastifySchema, preValidationHookHandler } from 'fastify';
import { z } from 'zod';
import {
  IDEMPOTENCY_KEY_FIELD,
  type InputOf,
  type Operation,
  pathParams,
  payloadSchema,
  type RestBinding,
} from '../../protocol/operation.js';
import { admittedKinds, serviceOf, userOf } from './auth/principal.js';
import { type Caller, type Ctx, requireRole } from './context.js';
import { type Wording, worded } from './errors.js';
import type { Connection } from './gateway/connection.js';
import type { Gateway } from './gateway/gateway.js';
import type { HttpServer } from './http.js';
import { errorResponses, hookedResponses } from './http-schemas.js';
import { wasReplayed } from './idempotency.js';
import type { Logger } from './log.js';
import { OPTIONAL_BODY } from './openapi.js';
import type { OperationHooks } from './operation-hooks.js';

/** What a handler returns: the response; for an operation answering 204 (no body) it is ignored. */
type Answer<O extends Operation> =
  | Returned<z.input<O['response']>>
  | Promise<Returned<z.input<O['response']>>>;
type Returned<T> = [T] extends [null] ? unknown : T;

/**
 * The service function behind an operation. Twins get the context and the validated input, the
 * same on both transports; a socket-only operation (or one whose REST twin is a plain route) also
 * gets its connection (subscriptions, authentication, paced pages) and the frame's request id,
 * which frames it sends before its ack can carry.
 */
export type OperationHandler<O extends Operation> = O['rest'] extends RestBinding
  ? (ctx: Ctx, input: InputOf<O>) => Answer<O>
  : (ctx: Ctx, input: InputOf<O>, connection: Connection, requestId: number | undefined) => Answer<O>;

type Handler = (ctx: Ctx, input: unknown, connection?: Connection, requestId?: number) => unknown;

/**
 * How each transport words the errors of an operation's service that carry a reason (a service
 * says "the expected revision", REST an If-Match header or `body.revision`, a frame `d.revision`).
 */
export interface Wordings {
  rest?: Wording;
  frame?: Wording;
}

export interface OperationBinding {
  readonly op: Operation;
  readonly handler: Handler;
  readonly wordings?: Wordings | undefined;
}

/**
 * Binds an operation declared in `protocol/` to the service function that serves it, and to the
 * wordings of the refusals its service states in its own terms, if any.
 */
export function serve<O extends Operation>(
  op: O,
  handler: OperationHandler<O>,
  wordings?: Wordings,
): OperationBinding {
  return { op, handler: handler as Handler, wordings };
}

/** The handler with the errors it throws in the words of `word`; the handler itself without one. */
function wordedBy(handler: Handler, word: Wording | undefined): Handler {
  if (!word) return handler;
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (error) {
      throw worded(error, word);
    }
  };
}

/**
 * Registers the gateway twin of each frame operation: the payload is validated against the
 * operation's request schema, anonymous connections are refused unless the operation is public,
 * and the result is the ack payload. The operation's hooks, if any, run around its service function.
 */
export function registerFrames(
  gateway: Gateway,
  ctxOf: (caller: Caller) => Ctx,
  log: Logger,
  bindings: readonly OperationBinding[],
  hooks: OperationHooks,
): void {
  for (const { op, handler: serviceHandler, wordings } of bindings) {
    if (!op.frame) continue;
    const handler = wordedBy(hooks.around(op, serviceHandler), wordings?.frame);
    gateway.handle(
      op.name,
      payloadSchema(op),
      (connection, payload, frame) =>
        handler(
          ctxOf({
            user: userOf(connection.principal),
            service: serviceOf(connection.principal),
            log,
            ip: connection.remoteAddress,
          }),
          payload,
          connection,
          frame.id,
        ),
      { admits: op.public ? 'anyone' : admittedKinds(op), setup: op.setup },
    );
  }
}

/**
 * Registers the REST twin of each operation that has one. Authentication is not added here: the
 * scope the module routes live in requires a user on every route not declared public (see
 * `secureByDefault`), and `config.public` and `config.serviceToken` carry the operation's declaration to it.
 */
export function registerRoutes(
  http: HttpServer,
  ctxOf: (caller: Caller) => Ctx,
  bindings: readonly OperationBinding[],
  hooks: OperationHooks,
): void {
  for (const { op, handler: serviceHandler, wordings } of bindings) {
    const rest = op.rest;
    if (!rest) continue;
    const handler = wordedBy(hooks.around(op, serviceHandler), wordings?.rest);
    const status = rest.status ?? 200;
    const createdWhen = rest.createdWhen as ((answer: unknown) => boolean) | undefined;
    const { schema, input } = requestShape(op, rest);
    schema.operationId = op.name;
    schema.tags = [op.tag];
    schema.summary = op.summary;
    schema.response = {
      [status]: op.response,
      ...(createdWhen ? { 201: op.response } : {}),
      ...errorResponses(...op.errors),
      ...(hooks.get(op.name) ? hookedResponses() : {}),
    };
    const call = (request: FastifyRequest) => handler(ctxOf(request), input(request));
    const beforeInput = [
      ...(op.role ? [roleBeforeInput(op.role)] : []),
      ...(rest.optionalBody ? [absentBodyAsEmpty] : []),
    ];
    if (rest.optionalBody) (schema as Record<string, unknown>)[OPTIONAL_BODY] = true;
    http.route({
      method: rest.method,
      url: rest.path,
      config: { public: op.public, serviceToken: op.serviceToken },
      ...(beforeInput.length > 0 ? { preValidation: beforeInput } : {}),
      schema,
      handler:
        status === 200 && !createdWhen && !rest.idempotencyKey
          ? async (request: FastifyRequest) => call(request)
          : async (request: FastifyRequest, reply: FastifyReply) => {
              const result = await call(request);
              reply.code(createdWhen?.(result) ? 201 : status);
              if (wasReplayed(result)) reply.header('idempotent-replayed', 'true');
              return status === 204 ? reply.send(null) : result;
            },
    });
  }
}

/**
 * The declared role's check, after authentication and before the input is validated: a caller
 * without the role learns nothing about what their input would have been judged.
 */
function roleBeforeInput(role: 'moderator' | 'admin'): preValidationHookHandler {
  return (request, _reply, done) => {
    try {
      requireRole({ user: request.user } as Ctx, role);
      done();
    } catch (error) {
      done(error as Error);
    }
  };
}

/**
 * An operation's body that may be left out (`rest.optionalBody`): a request without one (no
 * content type, which a body needs) reads as `{}`. A JSON `null` sent as the body stays null, and
 * the schema refuses it.
 */
const absentBodyAsEmpty: preValidationHookHandler = (request, _reply, done) => {
  if (request.body == null && request.headers['content-type'] === undefined) request.body = {};
  done();
};

/**
 * Where a REST request's input comes from: fields named in the path from the path, the others
 * from the body (GET: the query string). The handler gets them as one object, like a frame's `d`.
 */
function requestShape(
  op: Operation,
  rest: RestBinding,
): { schema: FastifySchema; input: (request: FastifyRequest) => unknown } {
  if (rest.idempotencyKey) return keyedRequestShape(op, rest);
  const request = op.request;
  const carrier = rest.method === 'GET' ? 'querystring' : 'body';
  const fromCarrier = (r: FastifyRequest) => (carrier === 'body' ? r.body : r.query);
  if (!request) return { schema: {}, input: () => undefined };
  const params = pathParams(rest.path);
  if (params.length === 0) return { schema: { [carrier]: request }, input: fromCarrier };
  if (!(request instanceof z.ZodObject)) {
    throw new Error(`Operation ${op.name} has path parameters, so its request must be an object schema.`);
  }
  const mask = Object.fromEntries(params.map((name) => [name, true])) as Record<string, true> &
    Record<number, never>;
  const remaining = request.omit(mask);
  const schema: FastifySchema = { params: request.pick(mask) };
  if (Object.keys(remaining.shape).length === 0) return { schema, input: (r) => r.params };
  schema[carrier] = remaining;
  return {
    schema,
    input: (r) => ({ ...(r.params as object), ...(fromCarrier(r) as object) }),
  };
}

/**
 * The request shape of an operation whose `idempotency_key` field is the Idempotency-Key header:
 * the other fields as usual, the header validated (422 names `headers.idempotency-key`) and put
 * into the input under the field's name, so the service sees one object on both transports.
 */
function keyedRequestShape(
  op: Operation,
  rest: RestBinding,
): { schema: FastifySchema; input: (request: FastifyRequest) => unknown } {
  const request = op.request;
  const keySchema = request instanceof z.ZodObject ? request.shape[IDEMPOTENCY_KEY_FIELD] : undefined;
  if (!(request instanceof z.ZodObject) || !(keySchema instanceof z.ZodType)) {
    throw new Error(
      `Operation ${op.name} takes an Idempotency-Key, so its request must have ${IDEMPOTENCY_KEY_FIELD}.`,
    );
  }
  const inner = requestShape(
    { ...op, request: request.omit({ [IDEMPOTENCY_KEY_FIELD]: true }) },
    { method: rest.method, path: rest.path },
  );
  return {
    schema: { ...inner.schema, headers: z.looseObject({ [HEADER]: keySchema }) },
    input: (r) => ({ ...(inner.input(r) as object), [IDEMPOTENCY_KEY_FIELD]: r.headers[HEADER] }),
  };
}

const HEADER = 'idempotency-key';
