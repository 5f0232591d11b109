import type { FastifyReply, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify';
import { serviceTokenScheme } from '../../../protocol/operation.js';
import { AppError, ErrorCode } from '../errors.js';
import { hookList } from '../http.js';
import type { AccessTokens, AuthUser } from './access-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `requireUser` hook; null on routes without it. */
    user: AuthUser | null;
  }
  interface FastifyContextConfig {
    /** Served to anonymous callers; every other module route requires a signed-in user. */
    public?: boolean;
  }
}

const BEARER_PREFIX = 'Bearer ';

/**
 * Parses `Authorization: Bearer <token>`; anything else is a missing credential. The token's
 * characters are not checked here: anything that is not a token this service signed fails
 * verification anyway, and a regular expression over a 700-character header cost every request.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header?.startsWith(BEARER_PREFIX) || header.length === BEARER_PREFIX.length) return undefined;
  return header.slice(BEARER_PREFIX.length);
}

/**
 * An onRequest hook for routes that need a user: it verifies the bearer token with the shared
 * verifier and sets `request.user`, or answers 401 before the body is even read. Callback-style,
 * like the app's other hooks: an async hook costs a cheap route a promise and Fastify's handling
 * of it on every request.
 */
export function requireUser(tokens: AccessTokens) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      done(new AppError(ErrorCode.UNAUTHENTICATED, 'A bearer access token is required.'));
      return;
    }
    tokens.verify(token).then((user) => {
      request.user = user;
      done();
    }, done);
  };
}

/** The security requirement routes using `requireUser` declare in OpenAPI. */
export const bearerSecurity = [{ bearerAuth: [] }];
/** The security requirement routes using `requireServiceToken` declare (service-tokens.ts). */
export const serviceTokenSecurity = [{ [serviceTokenScheme.name]: [] }];

/**
 * An onRoute hook for the scope module routes are registered in: a route needs a signed-in user
 * unless it declares `config: { public: true }`, or a service token when it declares
 * `config: { serviceToken: true }`, so forgetting a declaration fails closed.
 * The OpenAPI document says which: `security: []` on public routes, the scheme of the others.
 */
export function secureByDefault(hooks: { user: onRequestHookHandler; service: onRequestHookHandler }) {
  return (route: RouteOptions) => {
    route.schema ??= {};
    if (route.config?.public === true) {
      route.schema.security = [];
      return;
    }
    const service = route.config?.serviceToken === true;
    route.schema.security = service ? serviceTokenSecurity : bearerSecurity;
    route.onRequest = [service ? hooks.service : hooks.user, ...hookList(route.onRequest)];
  };
}
