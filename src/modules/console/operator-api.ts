import type { FastifyRequest } from 'fastify';
import { authRefresh } from '../../../protocol/auth.js';
import { type PathParamsOf, type PathValues, pathOf } from '../../../protocol/rest-path.js';
import type { HttpServer } from '../../platform/http.js';
import type { ConsoleSession, ConsoleSessions } from './session.js';

/**
 * The console's only way to read or change anything: the service's own API, called in process
 * (Fastify's inject) with the signed-in operator's access token. Every rule, validation, role
 * check and status is the API's, and a refusal comes back as the API's problem, whose `detail`
 * the page shows.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiRequest {
  method: Method;
  /** The path, its parameters already encoded (`apiCall()` fills a declared operation's). */
  path: string;
  /** Query fields; empty and undefined ones are left out. */
  query?: Record<string, string | number | undefined>;
  body?: object;
  /** Economy writes need one; a form carries it so that submitting twice replays the first answer. */
  idempotencyKey?: string;
}

export interface Problem {
  status: number;
  title: string;
  detail: string;
  code: string;
  errors?: { path: string; message: string }[];
  /** Seconds, from a 429's or 503's `retry_after`. */
  retryAfter?: number;
}

export type ApiResult<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; problem: Problem };

/** The operator's session ended under the console (revoked, suspended, expired): sign in again. */
export class SessionEnded extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** A path segment from user input, encoded so that it stays one segment. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/** An operation of the API, by the REST twin `protocol/` declares for it. */
export interface RestOperation<Path extends string = string> {
  readonly name: string;
  readonly rest: { readonly method: Method; readonly path: Path };
}

/**
 * What a call of an operation carries besides its method and path: `params` fill the path's
 * `:name` segments (required when it has any).
 */
export type CallOf<Path extends string> = Omit<ApiRequest, 'method' | 'path'> &
  (PathParamsOf<Path> extends never ? { params?: PathValues<Path> } : { params: PathValues<Path> });

/**
 * The call of a declared operation: its method, and its path with each `:name` segment filled
 * from `params` (encoded, refused when missing), with what the call carries besides.
 */
export function apiCall<const Path extends string>(
  operation: RestOperation<Path>,
  ...[call]: PathParamsOf<Path> extends never ? [call?: CallOf<Path>] : [call: CallOf<Path>]
): ApiRequest {
  const { params, ...carried } = (call ?? {}) as CallOf<string>;
  return { method: operation.rest.method, path: pathOf<string>(operation, params), ...carried };
}

/** An operation's route as the OpenAPI document writes it (`DELETE /api/servers/{server_id}`), for summaries. */
export function routeOf(operation: RestOperation): string {
  return `${operation.rest.method} ${operation.rest.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
}

/** Refresh this long before the access token expires, so a call never carries an expired one. */
const REFRESH_MARGIN_MS = 30_000;

interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

export class OperatorApi {
  /** One refresh at a time per session on this node: a second would reuse a rotated refresh token. */
  private readonly refreshing = new Map<string, Promise<ConsoleSession>>();

  constructor(
    private readonly http: HttpServer,
    private readonly sessions: ConsoleSessions,
  ) {}

  /** Calls the API as nobody in particular (sign-in), from the browser's address (rate limits are per IP). */
  async anonymous<T>(request: FastifyRequest, call: ApiRequest, token?: string): Promise<ApiResult<T>> {
    const response = await this.http.inject({
      method: call.method,
      url: urlOf(call),
      remoteAddress: request.ip,
      headers: {
        'x-request-id': request.id,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(call.idempotencyKey ? { 'idempotency-key': call.idempotencyKey } : {}),
        ...(call.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(call.body ? { payload: JSON.stringify(call.body) } : {}),
    });
    const body = response.body ? (response.json() as unknown) : null;
    if (response.statusCode < 400) return { ok: true, status: response.statusCode, body: body as T };
    return { ok: false, status: response.statusCode, problem: problemOf(response.statusCode, body) };
  }

  /** Calls the API as the session's operator; throws SessionEnded when the API no longer accepts them. */
  async call<T>(
    request: FastifyRequest,
    sessionId: string,
    session: ConsoleSession,
    call: ApiRequest,
  ): Promise<ApiResult<T>> {
    const current =
      session.accessExpiresAt - Date.now() < REFRESH_MARGIN_MS
        ? await this.refresh(request, sessionId, session)
        : session;
    const result = await this.anonymous<T>(request, call, current.accessToken);
    if (!result.ok && result.status === 401) throw new SessionEnded(result.problem.detail);
    return result;
  }

  /** Exchanges the refresh token (rotation) and stores the new pair in the session. */
  private refresh(
    request: FastifyRequest,
    sessionId: string,
    session: ConsoleSession,
  ): Promise<ConsoleSession> {
    let running = this.refreshing.get(sessionId);
    if (!running) {
      running = (async () => {
        const answer = await this.anonymous<TokenAnswer>(
          request,
          apiCall(authRefresh, { body: { refresh_token: session.refreshToken } }),
        );
        if (!answer.ok) throw new SessionEnded(answer.problem.detail);
        Object.assign(session, tokensOf(answer.body));
        await this.sessions.save(sessionId, session);
        return session;
      })().finally(() => this.refreshing.delete(sessionId));
      this.refreshing.set(sessionId, running);
    }
    return running;
  }
}

/** The session fields a token answer (login or refresh) sets. */
export function tokensOf(
  answer: TokenAnswer,
): Pick<ConsoleSession, 'accessToken' | 'refreshToken' | 'accessExpiresAt'> {
  return {
    accessToken: answer.access_token,
    refreshToken: answer.refresh_token,
    accessExpiresAt: Date.now() + answer.expires_in * 1000,
  };
}

function urlOf(call: ApiRequest): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(call.query ?? {})) {
    if (value !== undefined && value !== '') query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `${call.path}?${text}` : call.path;
}

function problemOf(status: number, body: unknown): Problem {
  const fields = (body ?? {}) as Partial<Problem> & { retry_after?: unknown };
  return {
    status,
    title: typeof fields.title === 'string' ? fields.title : 'Error',
    detail: typeof fields.detail === 'string' ? fields.detail : `The API answered ${status}.`,
    code: typeof fields.code === 'string' ? fields.code : 'UNKNOWN',
    ...(Array.isArray(fields.errors) ? { errors: fields.errors } : {}),
    ...(typeof fields.retry_after === 'number' ? { retryAfter: fields.retry_after } : {}),
  };
}
