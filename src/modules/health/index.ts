import { defineModule } from '../../platform/module.js';
import { registerHealthMetrics } from './health.metrics.js';
import { registerHealthRoutes } from './health.routes.js';

/** Liveness, readiness and Prometheus metrics: the three probes an orchestrator needs. */
export const healthModule = defineModule({
  name: 'health',
  tables: [],
  needs: [],
  setup(platform) {
    registerHealthMetrics(platform);
    return { api: {}, routes: (http) => registerHealthRoutes(http, platform) };
  },
});
