import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { hostMetricsText } from './cluster/host-metrics.js';
import { workerSlot } from './cluster/worker-messages.js';
import { HotCounter } from './hot-counter.js';
import { HotHistogram } from './hot-histogram.js';

let processRegistry: Registry | undefined;

/**
 * Node's process metrics (prom-client's defaults: memory, CPU, event loop lag, GC), once per
 * process: they describe the process, and their GC observer is never released, so a set per app
 * would keep every closed app's registry, and the app through its gauges' callbacks, alive.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * One registry per app instance (tests run several apps in one process, and prom-client's
 * global registry would make their metric names collide), served with the process's metrics.
 */
export function createMetrics() {
  const registry = new Registry();
  /** Everything this process exports: its Node metrics and the app's. */
  const registries = [processMetrics(), registry];
  return {
    registry,
    registries,
    /** What /metrics serves: this process's registries, or in worker mode the whole host's. */
    exposition: async (): Promise<string> =>
      workerSlot() === undefined ? Registry.merge(registries).metrics() : hostMetricsText(),
    // Observed on every request: see HotHistogram for why it is not prom-client's Histogram.
    httpRequestDuration: new HotHistogram({
      name: 'atrium_http_request_duration_seconds',
      help: 'HTTP request duration by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    wsConnections: new Gauge({
      name: 'atrium_ws_connections',
      help: 'Open gateway WebSocket connections.',
      registers: [registry],
    }),
    // Counted on every frame: see HotCounter for why it is not prom-client's Counter.
    wsFramesReceived: new HotCounter({
      name: 'atrium_ws_frames_received_total',
      help: 'Frames received on the gateway, by frame type (invalid: undecodable; unknown: no handler for the type).',
      labelNames: ['type'] as const,
      registers: [registry],
    }),
    wsClosedByServer: new Counter({
      name: 'atrium_ws_closed_by_server_total',
      help: 'Connections the gateway closed, by reason (auth_timeout, session_ended, slow_consumer, flood, too_many_sockets).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    statementBatchSize: new Histogram({
      name: 'atrium_statement_batch_size',
      help: 'Calls served by one statement of a batched write (src/platform/batcher.ts), by statement.',
      labelNames: ['statement'] as const,
      buckets: [1, 2, 4, 8, 16, 32, 64, 100],
      registers: [registry],
    }),
    eventLoopStalls: new Counter({
      name: 'atrium_event_loop_stalls_total',
      help: 'Times the event loop was blocked for over 1 s (src/platform/event-loop-stall.ts).',
      registers: [registry],
    }),
    eventPublishFailures: new Counter({
      name: 'atrium_event_publish_failures_total',
      help: 'Events that could not be published on the bus (the KV store unreachable), by event type; their changes stand, live readers missed them.',
      labelNames: ['type'] as const,
      registers: [registry],
    }),
    wsErrorFrames: new Counter({
      name: 'atrium_ws_error_frames_total',
      help: 'Error frames sent by the gateway, by error code.',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
