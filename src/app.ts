import { type Config, configParts } from './config.js';
import { modules } from './modules/index.js';
import { AccessTokens, SESSION_REVOCATIONS_TOPIC } from './platform/auth/access-tokens.js';
import { requireUser, secureByDefault } from './platform/auth/http-auth.js';
import { loadKeyRing } from './platform/auth/keys.js';
import { ofSessions } from './platform/auth/principal.js';
import { revocationLog } from './platform/auth/revocation-log.js';
import { requireServiceToken, ServiceTokens } from './platform/auth/service-tokens.js';
import { registerBacklogGauges } from './platform/backlog-gauges.js';
import { EventBus } from './platform/bus.js';
import { CallContext } from './platform/context.js';
import { ControlChannel } from './platform/control-channel.js';
import { type Database, openDatabase } from './platform/db.js';
import { EventLoopStalls } from './platform/event-loop-stall.js';
import { Gateway } from './platform/gateway/gateway.js';
import { createHttpServer, type HttpServer } from './platform/http.js';
import { IdleCollection } from './platform/idle-collection.js';
import { InFlight } from './platform/in-flight.js';
import { createKv, type Kv, redisTopology } from './platform/kv/index.js';
import { createLogger, type Logger } from './platform/log.js';
import { createMetrics } from './platform/metrics.js';
import { migrateUp } from './platform/migrate.js';
import {
  type ModuleApis,
  type ModuleDefinition,
  type Platform,
  registerCommands,
  setupModules,
} from './platform/module.js';
import { OperationHooks } from './platform/operation-hooks.js';
import { type OperationBinding, registerFrames, registerRoutes } from './platform/operations.js';
import { Outbox } from './platform/outbox.js';
import { readBacklog } from './platform/outbox-store.js';

/** The modules' public APIs by name (`app.modules.presence.flushLastSeen()`). */
export type Modules = ModuleApis<typeof modules>;

export interface App extends Platform {
  http: HttpServer;
  modules: Modules;
  /** Every operation's binding to its service function, by operation name (service-level tests call these). */
  operations: ReadonlyMap<string, OperationBinding>;
  /** The operators' commands, served on DATA_DIR's control socket once the app listens. */
  control: ControlChannel;
  /**
   * Binds HTTP and the gateway, then the control channel unless told not to (in worker mode one
   * worker serves it for the host); port 0 in the config picks free ports, returned here.
   */
  listen(options?: { controlChannel?: boolean }): Promise<{ httpPort: number; wsPort: number }>;
  /**
   * Stops accepting, drains in-flight work (requests and frames whose clients left included, and
   * their publishes) within SHUTDOWN_GRACE_MS, closes sockets, stops the modules (presence ends),
   * then closes the KV store and the database. Every step runs even when an earlier one failed;
   * rejects afterwards if any did.
   */
  close(): Promise<void>;
}

/** Infrastructure a caller already holds (tests share one database clone per file this way). */
export interface AppOverrides {
  db?: Database;
  kv?: Kv;
  log?: Logger;
  /** Another module list than src/modules/index.ts (tests of the module kit itself). */
  modules?: readonly ModuleDefinition[];
}

/**
 * Stops accepting HTTP requests and waits for in-flight ones, but only for `graceMs`: after that
 * the remaining connections are cut so one hung request cannot hold up a deploy.
 */
async function closeHttp(http: HttpServer, graceMs: number): Promise<void> {
  const timer = setTimeout(() => http.server.closeAllConnections(), graceMs);
  try {
    await http.close();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for the work still running (see InFlight) until `graceEnds` (performance.now(): a wall clock
 * set back must not stretch the grace), logging what it waits for;
 * what is left then is logged by kind and abandoned, as closing HTTP cuts the connections still
 * open after the grace.
 */
async function finishInFlight(inFlight: InFlight, log: Logger, graceEnds: number): Promise<void> {
  if (inFlight.size === 0) return;
  log.info({ running: inFlight.kinds() }, 'waiting for in-flight work');
  const left = await inFlight.idle(Math.max(0, graceEnds - performance.now()));
  if (left) log.warn({ running: left }, 'shutdown grace lapsed with work still running; closing anyway');
  else log.info('in-flight work finished');
}

/** A named step of shutdown; a list of steps in place of one runs them in parallel. */
type ReleaseStep = readonly [name: string, release: () => Promise<unknown>];

/**
 * Runs every step, each one even when an earlier one failed, so a failure cannot leave the
 * database or Redis open; each failure is logged with its step. Rejects only after the last step
 * when any failed, so the caller still learns of it.
 */
async function releaseAll(
  log: Logger,
  steps: readonly (ReleaseStep | readonly ReleaseStep[])[],
): Promise<void> {
  const failures: unknown[] = [];
  const run = async ([name, release]: ReleaseStep) => {
    try {
      await release();
    } catch (err) {
      log.error({ err, step: name }, 'shutdown step failed');
      failures.push(err);
    }
  };
  for (const step of steps) {
    if (isParallel(step)) await Promise.all(step.map(run));
    else await run(step);
  }
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} shutdown step(s) failed`);
}

function isParallel(step: ReleaseStep | readonly ReleaseStep[]): step is readonly ReleaseStep[] {
  return Array.isArray(step[0]);
}

/** Builds the whole service; `npm start` and the tests go through this same function. */
export async function buildApp(config: Config, overrides: AppOverrides = {}): Promise<App> {
  const log = overrides.log ?? createLogger(config);
  const metrics = createMetrics();
  const owned: ReleaseStep[] = [];
  // Watches from listen() to close(): loading, connecting and draining may block the loop for
  // seconds, as expected. The extensions module tells it what runs (Platform.stalls.track).
  const stalls = new EventLoopStalls({ log, counter: metrics.eventLoopStalls });
  // Gives memory back while the node is quiet, also from listen() to close().
  const idle = new IdleCollection();
  try {
    const db = overrides.db ?? (await openDatabase(config));
    if (!overrides.db) owned.unshift(['close the database', () => db.close()]);
    if (config.MIGRATE_ON_START) {
      const applied = await migrateUp(db, config.DATABASE_URL);
      if (applied.length > 0) log.info({ applied }, 'migrations applied');
    }
    const kv =
      overrides.kv ??
      (await createKv(redisTopology(config), {
        namespace: config.REDIS_KEY_PREFIX,
        commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
        onError: (err, context) => log.error({ err }, `kv: ${context}`),
      }));
    if (!overrides.kv) owned.unshift(['close the KV store', () => kv.close()]);

    const inFlight = new InFlight();
    const bus = new EventBus(
      kv,
      { maxLen: config.EVENT_HISTORY_SIZE, ttlMs: config.EVENT_HISTORY_TTL_SECONDS * 1000 },
      inFlight,
      (type) => metrics.eventPublishFailures.inc({ type }),
    );
    owned.unshift(['stop the event bus', async () => bus.close()]);
    const gateway = new Gateway({ config, log, metrics, bus, kv, inFlight });
    if (!gateway.native) {
      log.warn(
        'uWebSockets.js is running its slow JavaScript fallback on this Node version; see docs/operations.md for the native install.',
      );
    }
    const keys = await loadKeyRing(config, (created) =>
      log.info({ kid: created.kid, path: created.privateKeyPath }, 'generated a development signing key'),
    );
    const tokens = new AccessTokens({
      keys,
      kv,
      bus,
      revocations: revocationLog(db.data),
      issuer: config.JWT_ISSUER,
      ttlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    });
    // Logout, refresh-token reuse and account deletion end that session's sockets on every node.
    const stopRevocations = await bus.subscribe(SESSION_REVOCATIONS_TOPIC, (event) =>
      gateway.endSessions(ofSessions((event.d as { session_ids: string[] }).session_ids), 'session revoked'),
    );
    owned.unshift(['unsubscribe from session revocations', stopRevocations]);
    const http = await createHttpServer({ config, log, metrics, inFlight });
    const outbox = new Outbox({ data: db.data, log, bus, stopTimeoutMs: config.SHUTDOWN_GRACE_MS });
    registerBacklogGauges(metrics.registry, {
      prefix: 'atrium_outbox',
      what: 'Domain events for their consumers (extensions, webhook fan-out)',
      read: () => readBacklog(db.data),
    });
    const platform: Platform = {
      config,
      configParts,
      log,
      metrics,
      db,
      kv,
      bus,
      gateway,
      keys,
      tokens,
      serviceTokens: new ServiceTokens(),
      outbox,
      stalls,
      hooks: new OperationHooks(),
      ctx: (caller) => new CallContext(db.data, caller),
    };

    const built = await setupModules(platform, overrides.modules ?? modules);
    for (const { parts } of built) {
      if (parts.operations) registerFrames(gateway, platform.ctx, log, parts.operations, platform.hooks);
      if (parts.sessions) gateway.onSession(parts.sessions);
    }
    // Module routes live in one scope whose routes need a signed-in user unless declared public.
    http.register(async (scope) => {
      scope.addHook(
        'onRoute',
        secureByDefault({
          user: requireUser(tokens),
          service: requireServiceToken(platform.serviceTokens),
        }),
      );
      for (const { parts } of built) {
        if (parts.operations)
          registerRoutes(scope as HttpServer, platform.ctx, parts.operations, platform.hooks);
        parts.routes?.(scope as HttpServer);
      }
    });
    await http.ready();
    const control = registerCommands(
      new ControlChannel({ log, closeGraceMs: config.SHUTDOWN_GRACE_MS }),
      overrides.modules ?? modules,
      () => db.data,
    );
    const stopSteps = built
      .filter(({ parts }) => parts.stop)
      .reverse()
      .map(
        ({ name, parts }): ReleaseStep => [
          `stop the ${name} module`,
          () => (parts.stop as () => Promise<void>)(),
        ],
      );

    let closing: Promise<void> | undefined;
    return {
      ...platform,
      http,
      control,
      modules: Object.fromEntries(built.map(({ name, parts }) => [name, parts.api])) as Modules,
      operations: new Map(
        built.flatMap(({ parts }) => (parts.operations ?? []).map((binding) => [binding.op.name, binding])),
      ),
      async listen({ controlChannel = true } = {}) {
        await http.listen({ host: config.HOST, port: config.HTTP_PORT });
        const address = http.server.address();
        const httpPort = typeof address === 'object' && address ? address.port : config.HTTP_PORT;
        const wsPort = await gateway.listen();
        for (const { parts } of built) await parts.start?.({ httpPort, wsPort });
        outbox.start();
        if (controlChannel) await control.listen(config.DATA_DIR);
        stalls.start();
        idle.start();
        log.info({ httpPort, wsPort, host: config.HOST, database: db.kind, kv: kv.kind }, 'atrium listening');
        return { httpPort, wsPort };
      },
      close() {
        stalls.stop();
        const graceEnds = performance.now() + config.SHUTDOWN_GRACE_MS;
        closing ??= releaseAll(log, [
          [
            ['close HTTP', () => closeHttp(http, config.SHUTDOWN_GRACE_MS)],
            ['stop accepting sockets', async () => gateway.stopListening()],
            ['close the control channel', () => control.close()],
            ['stop the idle collection', () => idle.stop()],
          ],
          [
            // Requests and frames whose clients left run on, unseen by closing HTTP: what they
            // commit must still publish before the sockets, the modules, the KV store and the
            // database close.
            ['finish in-flight work', () => finishInFlight(inFlight, log, graceEnds)],
            // Its running handlers use the modules and the database, which close later. Beside the
            // in-flight work, not before it: its claim may be waiting for a pooled connection that
            // in-flight work holds, and the work must not wait for that.
            ['stop the outbox', () => outbox.stop()],
          ],
          ['close the gateway', async () => gateway.close()],
          // After the sockets closed, so presence's offline events and last sightings are included.
          ...stopSteps,
          ...owned,
        ]);
        return closing;
      },
    };
  } catch (error) {
    for (const [, release] of owned) await release().catch(() => {});
    throw error;
  }
}
