import type { AppServices } from '../app.js';
import type { HttpServer } from '../platform/http.js';
import { registerAuthRoutes } from './auth/auth.routes.js';
import { registerAuthFrames } from './auth/auth.socket.js';
import { registerAvatarRoutes } from './avatar/avatar.routes.js';
import { registerHealthRoutes } from './health/health.routes.js';
import { registerPresenceRoutes } from './presence/presence.routes.js';
import { registerPresenceFrames } from './presence/presence.socket.js';
import { registerProfileRoutes } from './profiles/profiles.routes.js';
import { registerUserRoutes } from './users/users.routes.js';

/** Every module's REST routes and gateway frame handlers, registered on one app. */
export function registerModules(http: HttpServer, services: AppServices) {
  registerHealthRoutes(http, services);
  registerAuthRoutes(http, services);
  registerAuthFrames(services);
  registerUserRoutes(http, services);
  registerPresenceRoutes(http, services);
  registerPresenceFrames(services);
  registerProfileRoutes(http, services);
  registerAvatarRoutes(http, services);
}
