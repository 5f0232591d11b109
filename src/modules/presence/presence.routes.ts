import {
  heartbeatResponseSchema,
  presenceLookupRequestSchema,
  presenceLookupResponseSchema,
  statusMessageRequestSchema,
  statusMessageResponseSchema,
} from '../../../protocol/presence.js';
import type { AppServices } from '../../app.js';
import { bearerSecurity } from '../../platform/auth/http-auth.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses } from '../../platform/http-schemas.js';

/** REST twins of the presence frames; both call the same PresenceService functions. */
export function registerPresenceRoutes(http: HttpServer, services: AppServices) {
  const { presence, requireUser } = services;
  const common = { onRequest: requireUser };
  const tags = ['presence'];

  http.post(
    '/api/presence/heartbeat',
    {
      ...common,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'Mark the caller online for the presence TTL.',
        response: { 200: heartbeatResponseSchema, ...errorResponses(401) },
      },
    },
    async (request) => presence.heartbeat(services.ctx(request)),
  );

  http.post(
    '/api/presence/presence',
    {
      ...common,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'Batch lookup: online, offline or unknown per id, as the caller may see it.',
        body: presenceLookupRequestSchema,
        response: { 200: presenceLookupResponseSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => ({ presence: await presence.lookup(services.ctx(request), request.body.user_ids) }),
  );

  http.put(
    '/api/presence/status',
    {
      ...common,
      schema: {
        tags,
        security: bearerSecurity,
        summary: 'Set the status message (trimmed, at most 140 characters); empty clears it.',
        body: statusMessageRequestSchema,
        response: { 200: statusMessageResponseSchema, ...errorResponses(401, 422) },
      },
    },
    async (request) => presence.setStatus(services.ctx(request), request.body.status_message),
  );
}
