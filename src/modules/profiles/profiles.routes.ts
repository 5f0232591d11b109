import { profileSchema, profileUpdateSchema } from '../../../protocol/profiles.js';
import type { AppServices } from '../../app.js';
import { bearerSecurity } from '../../platform/auth/http-auth.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses } from '../../platform/http-schemas.js';
import { ProfilesService } from './profiles.service.js';

export function registerProfileRoutes(http: HttpServer, services: AppServices) {
  const { requireUser } = services;
  const profiles = new ProfilesService();
  const tags = ['profile'];

  http.get(
    '/api/profile/me',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: "The signed-in user's profile, or the default profile if it was never saved.",
        response: { 200: profileSchema, ...errorResponses(401) },
      },
    },
    async (request) => profiles.get(services.ctx(request)),
  );

  http.put(
    '/api/profile/me',
    {
      onRequest: requireUser,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'Save any of bio, avatar_asset_id and privacy settings; omitted fields stay as they are.',
        body: profileUpdateSchema,
        response: { 200: profileSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => profiles.update(services.ctx(request), request.body),
  );
}
