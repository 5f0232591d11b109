import type { AppServices } from '../app.js';
import type { HttpServer } from '../platform/http.js';
import { registerAuthRoutes } from './auth/auth.routes.js';
import { registerAuthFrames } from './auth/auth.socket.js';
import { registerHealthRoutes } from './health/health.routes.js';
import { registerUserRoutes } from './users/users.routes.js';

/** Every module's REST routes and gateway frame handlers, registered on one app. */
export function registerModules(http: HttpServer, services: AppServices) {
  registerHealthRoutes(http, services);
  registerAuthRoutes(http, services);
  registerAuthFrames(services);
  registerUserRoutes(http, services);
}
