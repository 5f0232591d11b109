import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type App, type AppOverrides, buildApp } from '../../src/app.js';
import { type Config, configFrom, hasSharedRedis } from '../../src/config.js';
import { argon2Passwords, createAuthModule } from '../../src/modules/auth/index.js';
import { modules } from '../../src/modules/index.js';
import { type DataAccess, transaction } from '../../src/platform/data-access.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';
import { createLogger } from '../../src/platform/log.js';
import { keptWarnings } from './app-warnings.js';
import { createTestDatabase, TEST_QUERY_TIMEOUT_MS, type TestDatabase } from './database.js';
import { type ExchangeRecorder, recordExchanges } from './openapi-recorder.js';
import { type LogLine, preparedDataDir, TEST_REDIS_COMMAND_TIMEOUT_MS } from './service-process.js';

export interface TestApp extends App {
  /** Base URL of the HTTP server once `listen` ran; tests mostly use `http.inject`. */
  httpUrl: string;
  wsUrl: string;
  testDb: TestDatabase;
}

export type ConfigOverrides = Parameters<typeof configFrom>[0];

/**
 * The config of a test app: free ports, silent logs, the clone's database, and Redis when
 * REDIS_URL is set (as in CI's second pass) and the overrides name no Redis of their own (a
 * private Cluster or Sentinels), the in-process KV otherwise.
 */
export function testConfig(dataDir: string, testDb: TestDatabase, overrides: ConfigOverrides): Config {
  return configFrom({
    // Tests share one Redis across files and runs: each app (or cluster) gets a namespace of its own.
    REDIS_KEY_PREFIX: `test:${testDb.db.kind}:${basename(dataDir)}:`,
    HTTP_PORT: 0,
    WS_PORT: 0,
    LOG_LEVEL: 'silent',
    MIGRATE_ON_START: false,
    DATA_DIR: dataDir,
    SHUTDOWN_GRACE_MS: 2000,
    // As the test databases are opened (test/helpers/database.ts), for apps that open their own.
    DATABASE_QUERY_TIMEOUT_MS: TEST_QUERY_TIMEOUT_MS,
    // A loaded CI machine can take over production's 1 s to open a connection; the tests of a
    // database that stops answering set their own (test/helpers/database-proxy.ts).
    DATABASE_CONNECT_TIMEOUT_MS: TEST_QUERY_TIMEOUT_MS,
    // Every injected request comes from 127.0.0.1, so per-address limits would trip across tests;
    // the tests of those limits set their own values.
    REGISTER_IP_MAX_ATTEMPTS: 1_000_000,
    LOGIN_IP_MAX_ATTEMPTS: 1_000_000,
    // Tests fold visits and rank worlds when they mean to (modules.discovery.foldVisits, rankNow):
    // a periodic pass between a join and the test's own fold would fold the visits first.
    DISCOVERY_FOLD_INTERVAL_SECONDS: 3600,
    DISCOVERY_RANK_INTERVAL_SECONDS: 3600,
    ...(testDb.url ? { DATABASE_URL: testDb.url } : {}),
    ...(process.env.REDIS_URL && !namesRedis(overrides) ? sharedRedis() : {}),
    ...overrides,
  });
}

/**
 * The test run's Redis (REDIS_URL), with commands given seconds rather than production's 500 ms:
 * on a loaded 2-core CI machine a command can wait past 500 ms and turn a test's call into a 503.
 * No test breaks this Redis; the tests of command timeouts run their own behind a proxy.
 */
function sharedRedis(): ConfigOverrides {
  return { REDIS_URL: process.env.REDIS_URL, REDIS_COMMAND_TIMEOUT_MS: TEST_REDIS_COMMAND_TIMEOUT_MS };
}

function namesRedis(overrides: ConfigOverrides): boolean {
  return ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].some(
    (name) => overrides?.[name as keyof Config],
  );
}

/**
 * The service's modules, but passwords hashed with argon2id at its minimum cost: the suite
 * registers and logs in thousands of accounts, and at the service's parameters (19 MiB, t = 2)
 * each hash costs tens of milliseconds of CPU. The service itself has no way to lower them; a
 * test of the parameters builds its app with `modules` from src/modules/index.ts.
 */
export const testModules = modules.map((module) =>
  module.name === 'auth'
    ? createAuthModule({ passwords: argon2Passwords({ memoryCost: 8, timeCost: 1, parallelism: 1 }) })
    : module,
);

/** Builds the real app on a cloned database, on free ports, through the same buildApp as `npm start`. */
export async function buildTestApp(
  overrides: ConfigOverrides = {},
  appOverrides: Pick<AppOverrides, 'modules'> = {},
): Promise<TestApp> {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-app-'));
  const config = testConfig(dataDir, testDb, overrides);
  const warnings = keptWarnings(config);
  const app = await buildApp(config, {
    modules: testModules,
    ...appOverrides,
    db: testDb.db,
    ...(warnings.log ? { log: warnings.log } : {}),
  });
  const exchanges = recordExchanges(app);
  const { httpPort, wsPort } = await app.listen();
  const closeApp = app.close;
  let closing: Promise<void> | undefined;
  return Object.assign(app, {
    httpUrl: `http://127.0.0.1:${httpPort}`,
    wsUrl: `ws://127.0.0.1:${wsPort}/ws`,
    testDb,
    close() {
      closing ??= (async () => {
        await closeApp();
        warnings.forget();
        await testDb.drop();
        await rm(dataDir, { recursive: true, force: true });
        failOnViolations([exchanges]);
      })();
      return closing;
    },
  });
}

/**
 * One app for the enclosing `describe` (or the whole file, when called at the top level): built
 * in `beforeAll`, closed in `afterAll`. Returns a function that gives the app, to be called
 * inside hooks and tests:
 *
 *     const app = useTestApp({ PRESENCE_TTL_SECONDS: 1 });
 *     it('...', async () => {
 *       const response = await app().http.inject({ method: 'GET', url: '/healthz' });
 *
 * Hooks the file registers afterwards run after the app is built, and their `afterAll`s run
 * before it closes (vitest runs hooks as a stack), so a file can open sockets or register users
 * in a `beforeAll` of its own.
 */
export function useTestApp(
  overrides: ConfigOverrides = {},
  appOverrides: Pick<AppOverrides, 'modules'> = {},
): () => TestApp {
  let built: TestApp | undefined;
  beforeAll(async () => {
    built = await buildTestApp(overrides, appOverrides);
  });
  afterAll(async () => {
    await built?.close();
  });
  return () => {
    if (!built) {
      throw new Error('useTestApp builds the app in beforeAll: call app() inside a hook or a test.');
    }
    return built;
  };
}

/**
 * Several app instances sharing one database and one KV store, as a multi-node deployment does:
 * one Redis when REDIS_URL is set or the overrides name one (each node with its own connections),
 * otherwise one in-process store object passed to every node.
 */
export async function buildTestCluster(
  nodes: number,
  overrides: ConfigOverrides = {},
  /** Settings of one node only (its own REDIS_URL, through a proxy a test can break). */
  perNode: (index: number) => ConfigOverrides = () => ({}),
): Promise<TestCluster> {
  const testDb = await createTestDatabase();
  // Every node reads its signing keys from one DATA_DIR, as production nodes share one key.
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-cluster-'));
  const sharedKv = hasSharedRedis(testConfig(dataDir, testDb, overrides)) ? undefined : new MemoryKv();
  const apps: App[] = [];
  const recorders: ExchangeRecorder[] = [];
  const kept: ReturnType<typeof keptWarnings>[] = [];
  const urls: { httpUrl: string; wsUrl: string }[] = [];
  for (let i = 0; i < nodes; i++) {
    const config = testConfig(dataDir, testDb, { ...overrides, ...perNode(i) });
    const warnings = keptWarnings(config);
    kept.push(warnings);
    const app = await buildApp(config, {
      modules: testModules,
      db: testDb.db,
      ...(sharedKv ? { kv: sharedKv } : {}),
      ...(warnings.log ? { log: warnings.log } : {}),
    });
    apps.push(app);
    recorders.push(recordExchanges(app));
    const { httpPort, wsPort } = await app.listen();
    urls.push({ httpUrl: `http://127.0.0.1:${httpPort}`, wsUrl: `ws://127.0.0.1:${wsPort}/ws` });
  }
  return {
    nodes: apps.map((app, i) => Object.assign(app, urls[i])),
    async close() {
      for (const app of apps) await app.close();
      for (const warnings of kept) warnings.forget();
      await sharedKv?.close();
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
      failOnViolations(recorders);
    },
  };
}

/**
 * `buildApp` for a test that wires its own config or dependencies: the app's HTTP exchanges are
 * checked against its OpenAPI document like those of every test app, and `close` fails on a
 * violation.
 */
export async function buildCheckedApp(...args: Parameters<typeof buildApp>): Promise<App> {
  const app = await buildApp(...args);
  const exchanges = recordExchanges(app);
  const close = app.close;
  return Object.assign(app, {
    async close() {
      await close();
      failOnViolations([exchanges]);
    },
  });
}

/**
 * Fails the test file whose apps served an exchange their OpenAPI document does not describe
 * (test/helpers/openapi-recorder.ts). With OPENAPI_CHECK_REPORT set the violations only go to
 * that file, so that one run of the suite lists them all.
 */
function failOnViolations(recorders: ExchangeRecorder[]): void {
  const violations = [...new Set(recorders.flatMap((recorder) => recorder.violations()))];
  if (violations.length === 0 || process.env.OPENAPI_CHECK_REPORT) return;
  throw new Error(
    `The service answered ${violations.length} exchange(s) its OpenAPI document does not describe:\n${violations.join('\n')}`,
  );
}

export interface TestCluster {
  nodes: (App & { httpUrl: string; wsUrl: string })[];
  close(): Promise<void>;
}

/**
 * Runs `work` in a transaction and keeps it open for 300 ms more, calling `during` meanwhile from
 * outside the transaction's async context. Called inside the callback, requests would inherit that
 * context, and their statements given the root handle would run in this very transaction.
 */
export async function whileTransactionOpen(
  app: () => TestApp,
  work: (tx: DataAccess) => Promise<unknown>,
  during: () => void,
): Promise<void> {
  let opened: () => void = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const held = transaction(app().db.data, async (tx) => {
    await work(tx);
    opened();
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  await Promise.race([open, held]);
  during();
  await held;
}

/**
 * A batched statement's histogram (atrium_statement_batch_size) in the app's metrics: how many
 * statements ran and how many calls they served.
 */
export async function statementBatches(
  app: TestApp,
  statement: string,
): Promise<{ statements: number; calls: number }> {
  const text = (await app.http.inject({ method: 'GET', url: '/metrics' })).body;
  const value = (suffix: string) =>
    Number(
      new RegExp(`^atrium_statement_batch_size_${suffix}\\{statement="${statement}"\\} (\\d+)`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  return { statements: value('count'), calls: value('sum') };
}

/**
 * An app that owns its database and KV store, so that closing them is its own job (tests of
 * shutdown), with its log lines kept; `dispose` closes it (again) and removes what it made. The
 * database is a clone of its own on Postgres, the embedded one under its DATA_DIR otherwise.
 */
export async function buildOwningApp(
  settings: ConfigOverrides,
  appModules: NonNullable<AppOverrides['modules']> = testModules,
) {
  const dataDir = await preparedDataDir('atrium-own-');
  const testDb = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const config = configFrom({
    DATA_DIR: dataDir,
    HTTP_PORT: 0,
    WS_PORT: 0,
    REDIS_KEY_PREFIX: `test:own:${basename(dataDir)}:`,
    ...(testDb?.url ? { DATABASE_URL: testDb.url, MIGRATE_ON_START: false } : {}),
    ...(process.env.REDIS_URL && !namesRedis(settings) ? sharedRedis() : {}),
    ...settings,
  });
  const logged: LogLine[] = [];
  const log = createLogger(config, { write: (line: string) => logged.push(JSON.parse(line) as LogLine) });
  const app = await buildCheckedApp(config, { log, modules: appModules });
  const dispose = async () => {
    await app.close().catch(() => {});
    await testDb?.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  return { app, logged, dispose };
}
