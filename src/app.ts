import type { Config } from './config.js';
import { AuthService } from './modules/auth/auth.service.js';
import { revocationLog } from './modules/auth/revocations.repository.js';
import { PresenceService } from './modules/presence/presence.service.js';
import { PresenceTracker } from './modules/presence/presence.tracker.js';
import { registerModules } from './modules/register.js';
import { UsersService } from './modules/users/users.service.js';
import { AccessTokens, SESSION_REVOCATIONS_TOPIC } from './platform/auth/access-tokens.js';
import { requireUser } from './platform/auth/http-auth.js';
import { type KeyRing, loadKeyRing } from './platform/auth/keys.js';
import { EventBus } from './platform/bus.js';
import { CallContext, type Caller, type Ctx } from './platform/context.js';
import { type Database, openDatabase } from './platform/db.js';
import { Gateway } from './platform/gateway/gateway.js';
import { createHttpServer, type HttpServer } from './platform/http.js';
import { createKv, type Kv } from './platform/kv/index.js';
import { createLogger, type Logger } from './platform/log.js';
import { createMetrics, type Metrics } from './platform/metrics.js';
import { migrateUp } from './platform/migrate.js';
import { createLimiter } from './platform/rate-limit.js';

/** What every module is built from. Routes and socket handlers receive these, never globals. */
export interface AppServices {
  config: Config;
  log: Logger;
  metrics: Metrics;
  db: Database;
  kv: Kv;
  bus: EventBus;
  gateway: Gateway;
  keys: KeyRing;
  tokens: AccessTokens;
  /** onRequest hook for routes that need a signed-in user. */
  requireUser: ReturnType<typeof requireUser>;
  auth: AuthService;
  users: UsersService;
  presence: PresenceService;
  presenceTracker: PresenceTracker;
  /** The service context for one request or frame. */
  ctx(caller: Caller): Ctx;
}

export interface App extends AppServices {
  http: HttpServer;
  /** Binds HTTP and the gateway; port 0 in the config picks free ports, returned here. */
  listen(): Promise<{ httpPort: number; wsPort: number }>;
  /**
   * Stops accepting, drains in-flight work, closes sockets, ends presence, then closes the KV store
   * and the database. Every step runs even when an earlier one failed; rejects afterwards if any did.
   */
  close(): Promise<void>;
}

/** Infrastructure a caller already holds (tests share one database clone per file this way). */
export interface AppOverrides {
  db?: Database;
  kv?: Kv;
  log?: Logger;
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
  try {
    const db = overrides.db ?? (await openDatabase(config));
    if (!overrides.db) owned.unshift(['close the database', () => db.close()]);
    if (config.MIGRATE_ON_START) {
      const applied = await migrateUp(db, config.DATABASE_URL);
      if (applied.length > 0) log.info({ applied }, 'migrations applied');
    }
    const kv =
      overrides.kv ??
      (await createKv(config.REDIS_URL, {
        namespace: config.REDIS_KEY_PREFIX,
        commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
        onError: (err, context) => log.error({ err }, `kv: ${context}`),
      }));
    if (!overrides.kv) owned.unshift(['close the KV store', () => kv.close()]);

    const bus = new EventBus(kv);
    const gateway = new Gateway({ config, log, metrics, bus });
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
      revocations: revocationLog(() => db.orm.em.fork()),
      issuer: config.JWT_ISSUER,
      ttlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    });
    // Logout, refresh-token reuse and account deletion end that session's sockets on every node.
    const stopRevocations = await bus.subscribe(SESSION_REVOCATIONS_TOPIC, (event) =>
      gateway.closeSessions((event.d as { session_ids: string[] }).session_ids),
    );
    owned.unshift(['unsubscribe from session revocations', stopRevocations]);
    const auth = new AuthService({
      tokens,
      refreshTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
      maxLoginFailures: config.LOGIN_MAX_FAILURES,
      loginFailuresByUsername: createLimiter(kv, {
        keyPrefix: 'login-fail',
        points: config.LOGIN_MAX_FAILURES,
        durationSeconds: config.LOGIN_LOCKOUT_SECONDS,
      }),
      loginAttemptsByIp: createLimiter(kv, {
        keyPrefix: 'login-ip',
        points: config.LOGIN_IP_MAX_ATTEMPTS,
        durationSeconds: config.LOGIN_IP_WINDOW_SECONDS,
      }),
      registrationsByIp: createLimiter(kv, {
        keyPrefix: 'register-ip',
        points: config.REGISTER_IP_MAX_ATTEMPTS,
        durationSeconds: config.REGISTER_IP_WINDOW_SECONDS,
      }),
    });
    const http = await createHttpServer({ config, log, metrics });
    const ctx: AppServices['ctx'] = (caller) => new CallContext(db.orm.em, kv, caller);
    const presenceTracker = new PresenceTracker({
      kv,
      gateway,
      log,
      ttlSeconds: config.PRESENCE_TTL_SECONDS,
      flushIntervalMs: config.LAST_SEEN_FLUSH_MS,
      leaseSeconds: config.NODE_LEASE_SECONDS,
      systemCtx: () => ctx({ user: null, log, ip: 'internal' }),
    });
    const presence = new PresenceService({
      kv,
      bus,
      ttlSeconds: config.PRESENCE_TTL_SECONDS,
      sightings: presenceTracker,
    });
    presenceTracker.attach(presence);
    gateway.onSession(presenceTracker);
    const services: AppServices = {
      config,
      log,
      metrics,
      db,
      kv,
      bus,
      gateway,
      keys,
      tokens,
      requireUser: requireUser(tokens),
      auth,
      users: new UsersService(auth, presence),
      presence,
      presenceTracker,
      ctx,
    };
    registerModules(http, services);
    await http.ready();

    let closing: Promise<void> | undefined;
    return {
      ...services,
      http,
      async listen() {
        await http.listen({ host: config.HOST, port: config.HTTP_PORT });
        const address = http.server.address();
        const httpPort = typeof address === 'object' && address ? address.port : config.HTTP_PORT;
        const wsPort = await gateway.listen();
        await presenceTracker.start();
        log.info({ httpPort, wsPort, host: config.HOST, database: db.kind, kv: kv.kind }, 'atrium listening');
        return { httpPort, wsPort };
      },
      close() {
        closing ??= releaseAll(log, [
          [
            ['close HTTP', () => closeHttp(http, config.SHUTDOWN_GRACE_MS)],
            ['close the gateway', () => gateway.close()],
          ],
          // After the sockets closed, so their offline events and last sightings are included.
          [
            'stop presence (offline events, node lease, final last_seen_at flush)',
            () => presenceTracker.stop(),
          ],
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
