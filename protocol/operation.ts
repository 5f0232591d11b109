import { z } from 'zod';

/**
 * One operation of the API, declared once: its request and response schemas, whether it is a
 * gateway frame (its type is the operation's name), its REST method and path, and whether it needs
 * a signed-in user. The server registers both twins from this declaration and the typed client
 * calls either one from it, so the two transports cannot drift apart.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RestBinding {
  method: HttpMethod;
  /** Fastify-style path; `:name` segments are request fields taken from the path. */
  path: string;
  /** The success status; 204 answers with no body, 202 says the work goes on after the answer. Default 200. */
  status?: 200 | 201 | 202 | 204;
  /**
   * For a POST that creates something only sometimes: the answers this says are a creation go out
   * as 201, the others with `status` (200). Both are documented, with the one response schema.
   */
  createdWhen?: (answer: never) => boolean;
  /**
   * The request's `idempotency_key` field travels as the `Idempotency-Key` header (required), not
   * in the body; a frame carries it in its payload like any field. An answer the service replays
   * for a retry goes out with `Idempotent-Replayed: true` (docs/economy.md, "Idempotency").
   */
  idempotencyKey?: true;
  /**
   * The JSON body may be left out, which reads as `{}`: a POST whose body fields are all optional
   * settings. A body that is sent must still pass the schema (JSON `null` is refused).
   */
  optionalBody?: true;
}

/** The request field an operation with `rest.idempotencyKey` takes from the Idempotency-Key header. */
export const IDEMPOTENCY_KEY_FIELD = 'idempotency_key';

/**
 * A REST twin the module registers as a plain route because HTTP carries part of it outside a
 * JSON body (codec bytes, an ETag precondition, a streamed msgpack answer), or, for a frame whose
 * twin is split over several paths (`chat.send`: the world's chat and a room's), the catalogue
 * operations serving each path. Both twins call the same service function; `operationId` names
 * the route in OpenAPI.
 */
export interface PlainRestTwin {
  method: HttpMethod;
  path: string;
  operationId: string;
}

/** A frame payload or REST body that must be absent (or an empty map on the socket). */
export const noPayload = z.undefined().or(z.object({}).strict());

export interface Operation<
  Name extends string = string,
  Request extends z.ZodType | undefined = z.ZodType | undefined,
  Response extends z.ZodType = z.ZodType,
  Frame extends boolean = boolean,
  Rest extends RestBinding | undefined = RestBinding | undefined,
> {
  /** The operationId in OpenAPI, and the frame type when `frame` is set. */
  readonly name: Name;
  readonly summary: string;
  /** The OpenAPI tag (the domain). */
  readonly tag: string;
  /**
   * Undefined for an operation without input. For REST, fields named in the path come from the
   * path (the schema is then an object), the rest from the body (GET: the query string).
   */
  readonly request: Request;
  readonly response: Response;
  /** Reachable over the gateway as a frame of type `name`. */
  readonly frame: Frame;
  readonly rest: Rest;
  /** Set instead of `rest` when the frame's REST twin is a plain route or several (see PlainRestTwin). */
  readonly restRoute: PlainRestTwin | readonly PlainRestTwin[] | undefined;
  /** Why a frame has no REST twin (events and connection state exist only on the socket). */
  readonly socketOnly: string | undefined;
  /** Served to anonymous callers; every other operation needs a signed-in user. */
  readonly public: boolean;
  /**
   * Takes a service token (`serviceTokenScheme`) instead of a user's access token: the operation
   * was declared `gameServer: true`, for game servers with their server token. A REST operation
   * under /internal (servers only), or a socket-only frame a game server's socket may send as
   * well as users' (its chunk stream).
   */
  readonly serviceToken: boolean;
  /** The role a caller needs, checked before the input is read (see OperationSpec.role). */
  readonly role: 'moderator' | 'admin' | undefined;
  /** Error statuses the operation can answer besides the ones every route can (400, 413, 415). */
  readonly errors: readonly number[];
  /**
   * A frame every client sends as it connects or reconnects (authentication, joins,
   * subscriptions): a node taking over a dead node's clients gets thousands at once, so the gateway
   * runs a bounded number of them at a time, at the gate named here, and queues the rest.
   */
  readonly setup: SetupGate | undefined;
}

/**
 * The gateway's gates for setup frames: `database` for those that run statements on the database
 * pool (WS_SETUP_CONCURRENCY at once, so clients already set up keep a share of the pool), `auth`
 * for the auth frame, a few KV round trips with no pooled connection (WS_AUTH_CONCURRENCY).
 */
export type SetupGate = 'auth' | 'database';

export interface OperationSpec<
  Request extends z.ZodType | undefined,
  Response extends z.ZodType,
  Frame extends boolean,
  Rest extends RestBinding | undefined,
> {
  summary: string;
  tag: string;
  request?: Request;
  response: Response;
  frame?: Frame;
  rest?: Rest;
  restRoute?: PlainRestTwin | readonly PlainRestTwin[];
  socketOnly?: string;
  public?: boolean;
  /** For dedicated game servers, with their server token (docs/gameservers.md). */
  gameServer?: boolean;
  /**
   * The role a caller needs: others are refused 403 FORBIDDEN before the input is read, so a
   * caller without it never has a field parsed (a webhook URL resolved). Services check it too.
   */
  role?: 'moderator' | 'admin';
  errors?: readonly number[];
  /** Sent by every client as it (re)connects, and the gate it waits at; see `Operation.setup`. Frames only. */
  setup?: SetupGate;
}

/** The OpenAPI security scheme of the operations that take a service token (declared `gameServer: true`). */
export const serviceTokenScheme = {
  name: 'serverToken',
  description: "A game server's per-spawn token (its --server-token launch argument), for /internal.",
} as const;

/**
 * Declares an operation. A frame needs a REST twin or a `socketOnly` reason, so every socket
 * operation stays reachable over plain HTTP unless there is a reason it cannot be.
 */
export function operation<
  const Name extends string,
  Response extends z.ZodType,
  Request extends z.ZodType | undefined = undefined,
  const Frame extends boolean = false,
  const Rest extends RestBinding | undefined = undefined,
>(
  name: Name,
  spec: OperationSpec<Request, Response, Frame, Rest>,
): Operation<Name, Request, Response, Frame, Rest> {
  const frame = (spec.frame ?? false) as Frame;
  const twins = [spec.rest, spec.restRoute, spec.socketOnly].filter((twin) => twin !== undefined);
  if (frame && twins.length !== 1) {
    throw new Error(`Operation ${name} is a frame: declare exactly one of rest, restRoute or socketOnly.`);
  }
  if (spec.restRoute && !frame) {
    throw new Error(`Operation ${name} has a plain REST route but is not a frame: declare it with rest.`);
  }
  if (spec.socketOnly && (!frame || spec.rest)) {
    throw new Error(`Operation ${name} is marked socketOnly but is not a frame-only operation.`);
  }
  if (spec.setup && !frame) throw new Error(`Operation ${name} is marked setup but is not a frame.`);
  if (spec.rest?.optionalBody && !bodyFieldsOptional(spec.rest, spec.request)) {
    throw new Error(`Operation ${name} declares an optional body: every field of its body must be optional.`);
  }
  if (spec.role && (frame || spec.public || spec.gameServer)) {
    throw new Error(`Operation ${name} declares a role: only a user's REST operation may.`);
  }
  if (
    spec.gameServer &&
    (spec.public || (frame ? !spec.socketOnly : !spec.rest?.path.startsWith('/internal/')))
  ) {
    throw new Error(
      `Operation ${name} is for game servers: a REST route under /internal, or a socket-only frame.`,
    );
  }
  return {
    name,
    summary: spec.summary,
    tag: spec.tag,
    request: spec.request as Request,
    response: spec.response,
    frame,
    rest: spec.rest as Rest,
    restRoute: spec.restRoute,
    socketOnly: spec.socketOnly,
    public: spec.public ?? false,
    serviceToken: spec.gameServer ?? false,
    role: spec.role,
    errors: spec.errors ?? [],
    setup: spec.setup,
  };
}

/** The input an operation's handler receives and a client sends (void for none). */
export type InputOf<O extends Operation> = O['request'] extends z.ZodType
  ? z.output<O['request']>
  : undefined;
/** What a client sends: the request schema's input side. */
export type SentInputOf<O extends Operation> = O['request'] extends z.ZodType
  ? z.input<O['request']>
  : undefined;
/** What the operation answers, as a client receives it. */
export type OutputOf<O extends Operation> = z.output<O['response']>;

/** The frame payload schema (`d`) of an operation. */
export function payloadSchema(op: Operation): z.ZodType {
  return op.request ?? noPayload;
}

/** Whether a request's fields outside the path may all be left out (and the method has a body). */
function bodyFieldsOptional(rest: RestBinding, request: z.ZodType | undefined): boolean {
  if (rest.method === 'GET' || !(request instanceof z.ZodObject)) return false;
  const params = pathParams(rest.path);
  return Object.entries(request.shape as Record<string, z.ZodType>).every(
    ([field, schema]) => params.includes(field) || schema.safeParse(undefined).success,
  );
}

/** The names of an operation's path parameters, in order. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1] as string);
}
