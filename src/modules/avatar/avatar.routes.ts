import { avatarLoadoutInputSchema, avatarLoadoutSchema } from '../../../protocol/profiles.js';
import type { AppServices } from '../../app.js';
import { bearerSecurity } from '../../platform/auth/http-auth.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses } from '../../platform/http-schemas.js';
import { AvatarService } from './avatar.service.js';

export function registerAvatarRoutes(http: HttpServer, services: AppServices) {
  const { requireUser } = services;
  const avatar = new AvatarService();
  const tags = ['avatar'];

  http.get(
    '/api/avatar/loadout',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: "The signed-in user's avatar loadout, or the server default (is_default: true).",
        response: { 200: avatarLoadoutSchema, ...errorResponses(401) },
      },
    },
    async (request) => avatar.get(services.ctx(request)),
  );

  http.put(
    '/api/avatar/loadout',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary:
          'Replace the avatar loadout. Only the envelope is checked: base_body a non-empty string, slots an object, at most 16 KiB of JSON.',
        body: avatarLoadoutInputSchema,
        response: { 200: avatarLoadoutSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => avatar.put(services.ctx(request), request.body),
  );
}
