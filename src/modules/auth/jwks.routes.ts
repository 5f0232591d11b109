import { z } from 'zod';
import type { KeyRing } from '../../platform/auth/keys.js';
import type { HttpServer } from '../../platform/http.js';

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

/** The key set is for other services and game servers, not a client operation, so it is a plain route. */
export function registerJwksRoute(http: HttpServer, keys: KeyRing) {
  http.get(
    '/.well-known/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'auth.jwks',
        tags: ['accounts'],
        summary: 'Public keys that verify access tokens (RS256), for other services and game servers.',
        response: { 200: jwksSchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return { keys: keys.jwks };
    },
  );
}
