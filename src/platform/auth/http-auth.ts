import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../errors.js';
import type { AccessTokens, AuthUser } from './access-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `requireUser` hook; null on routes without it. */
    user: AuthUser | null;
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
