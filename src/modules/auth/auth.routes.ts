import { z } from 'zod';
import {
  loginRequestSchema,
  refreshTokenRequestSchema,
  registerRequestSchema,
  tokenResponseSchema,
} from '../../../protocol/auth.js';
import type { AppServices } from '../../app.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses } from '../../platform/http-schemas.js';

const jwksSchema = z.object({
  keys: z.array(
    z.object({
      kty: z.string(),
      n: z.string(),
      e: z.string(),
      kid: z.string(),
      alg: z.literal('RS256'),
      use: z.literal('sig'),
    }),
  ),
});

export function registerAuthRoutes(http: HttpServer, services: AppServices) {
  const { auth } = services;
  const tags = ['accounts'];

  http.post(
    '/api/auth/register',
    {
      schema: {
        tags,
        summary: 'Create an account (18+ only) and start a session.',
        body: registerRequestSchema,
        response: { 201: tokenResponseSchema, ...errorResponses(409, 422, 429) },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return auth.register(services.ctx(request), request.body);
    },
  );

  http.post(
    '/api/auth/login',
    {
      schema: {
        tags,
        summary: 'Start a session with a username and password. Rate limited per username and per IP.',
        body: loginRequestSchema,
        response: { 200: tokenResponseSchema, ...errorResponses(401, 422, 429) },
      },
    },
    async (request) => auth.login(services.ctx(request), request.body),
  );

  http.post(
    '/api/auth/refresh',
    {
      schema: {
        tags,
        summary: 'Exchange a refresh token for a new pair. Reusing a spent token revokes its whole session.',
        body: refreshTokenRequestSchema,
        response: { 200: tokenResponseSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => auth.refresh(services.ctx(request), request.body.refresh_token),
  );

  http.post(
    '/api/auth/logout',
    {
      schema: {
        tags,
        summary: 'End the session of a refresh token. Idempotent.',
        body: refreshTokenRequestSchema,
        response: { 204: z.null().describe('Logged out.'), ...errorResponses(422) },
      },
    },
    async (request, reply) => {
      await auth.logout(services.ctx(request), request.body.refresh_token);
      return reply.code(204).send(null);
    },
  );

  http.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags,
        summary: 'Public keys that verify access tokens (RS256), for other services and game servers.',
        response: { 200: jwksSchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return { keys: services.keys.jwks };
    },
  );
}
