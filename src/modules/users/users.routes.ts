import { z } from 'zod';
import { deleteAccountRequestSchema, meSchema, publicUserViewSchema } from '../../../protocol/users.js';
import type { AppServices } from '../../app.js';
import { bearerSecurity } from '../../platform/auth/http-auth.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses } from '../../platform/http-schemas.js';

export function registerUserRoutes(http: HttpServer, services: AppServices) {
  const { users, requireUser } = services;
  const tags = ['accounts'];

  http.get(
    '/api/users/me',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'The signed-in account.',
        response: { 200: meSchema, ...errorResponses(401) },
      },
    },
    async (request) => users.me(services.ctx(request)),
  );

  http.delete(
    '/api/users/me',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'Delete the signed-in account after re-checking its password.',
        body: deleteAccountRequestSchema,
        response: { 204: z.null().describe('Deleted.'), ...errorResponses(401, 403, 422) },
      },
    },
    async (request, reply) => {
      await users.deleteAccount(services.ctx(request), request.body.password);
      return reply.code(204).send(null);
    },
  );

  http.get(
    '/api/users/:user_id',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: "Another user's public view.",
        params: z.object({ user_id: z.string().max(64) }),
        response: { 200: publicUserViewSchema, ...errorResponses(401, 404) },
      },
    },
    async (request) => users.publicView(services.ctx(request), request.params.user_id),
  );
}
