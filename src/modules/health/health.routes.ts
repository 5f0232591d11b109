import { z } from 'zod';
import { workerSlot } from '../../platform/cluster/worker-messages.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { HttpServer } from '../../platform/http.js';
import { sendProblem } from '../../platform/http-errors.js';
import { errorResponses } from '../../platform/http-schemas.js';
import type { Platform } from '../../platform/module.js';
import { mediaResponse } from '../../platform/openapi.js';
import { probe } from './probe.js';

const healthSchema = z.object({
  status: z.literal('ok'),
  uptime_seconds: z.number(),
  /** The answering process: in worker mode, one of the host's workers (docs/scaling.md). */
  pid: z.number().int(),
  worker: z.number().int().nullable(),
  gateway: z.object({
    transport: z.enum(['uws-native', 'uws-js-fallback']),
    native: z.boolean(),
  }),
});

const readySchema = z.object({
  status: z.literal('ready'),
  checks: z.object({ database: z.literal('ok'), kv: z.literal('ok') }),
});

/** Liveness, readiness and Prometheus metrics: the three probes an orchestrator needs. */
export function registerHealthRoutes(
  http: HttpServer,
  services: Pick<Platform, 'db' | 'kv' | 'gateway' | 'metrics'>,
) {
  const startedAt = Date.now();

  http.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        operationId: 'health.live',
        tags: ['operations'],
        summary:
          'Liveness: the process is up. Also reports which process answered and whether uWebSockets.js runs natively.',
        response: { 200: healthSchema },
      },
    },
    async () => ({
      status: 'ok' as const,
      uptime_seconds: Math.round((Date.now() - startedAt) / 1000),
      pid: process.pid,
      worker: workerSlot() ?? null,
      gateway: {
        transport: services.gateway.native ? ('uws-native' as const) : ('uws-js-fallback' as const),
        native: services.gateway.native,
      },
    }),
  );

  http.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        operationId: 'health.ready',
        tags: ['operations'],
        summary: 'Readiness: the database and the KV store answer.',
        response: { 200: readySchema, ...errorResponses(503) },
      },
    },
    async (_request, reply) => {
      const [database, kv] = await Promise.all([
        probe(() => services.db.ping()),
        probe(() => services.kv.ping()),
      ]);
      if (database === 'ok' && kv === 'ok') return { status: 'ready' as const, checks: { database, kv } };
      return sendProblem(
        reply,
        new AppError(ErrorCode.UNAVAILABLE, 'A dependency is not answering.', {
          details: { checks: { database, kv } },
        }),
      );
    },
  );

  http.get(
    '/metrics',
    {
      config: { public: true },
      schema: {
        operationId: 'health.metrics',
        tags: ['operations'],
        summary: 'Prometheus metrics in the text exposition format; in worker mode, of the whole host.',
        response: {
          ...errorResponses(503),
          200: mediaResponse('Metrics in the Prometheus text exposition format.', {
            'text/plain': z.string(),
          }),
        },
      },
    },
    async (_request, reply) => {
      let text: string;
      try {
        text = await services.metrics.exposition();
      } catch {
        // Worker mode: a worker's registry could not be gathered (it died mid-scrape); the next
        // scrape gathers the survivors and its replacement.
        return sendProblem(
          reply,
          new AppError(ErrorCode.UNAVAILABLE, "The host's metrics could not be gathered from every worker."),
        );
      }
      reply.type(services.metrics.registry.contentType);
      return text;
    },
  );
}
