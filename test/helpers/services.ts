import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { z } from 'zod';
import type { TokenResponse } from '../../protocol/auth.js';
import type { SentInputOf } from '../../protocol/operation.js';
import type { OperationName, Operations } from '../../protocol/operations.js';
import { type App, buildApp, type Modules } from '../../src/app.js';
import type { AccessTokens, AuthUser } from '../../src/platform/auth/access-tokens.js';
import type { Ctx } from '../../src/platform/context.js';
import type { Database } from '../../src/platform/db.js';
import type { Kv } from '../../src/platform/kv/kv.js';
import { PASSWORD, uniqueUsername } from './accounts.js';
import { type ConfigOverrides, testConfig, testModules } from './app.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/** A user registered through the auth module, and the identity a service call runs as. */
export interface ServiceUser {
  /** What `ctxFor` takes: the caller as a verified access token proves it. */
  user: AuthUser;
  username: string;
  password: string;
  tokens: TokenResponse;
}

/** What an operation's handler answers (before the transport serializes it). */
export type AnswerOf<N extends OperationName> = z.input<Operations[N]['response']>;

/**
 * The modules of the service on a cloned test database and the real KV store, with no HTTP
 * server listening and no socket: service rules are called directly, as the transports call them.
 */
export interface Services {
  db: Database;
  kv: Kv;
  /** The shared token verifier: whether a user's access token still works is part of the state. */
  tokens: AccessTokens;
  testDb: TestDatabase;
  /** Each module's API by name, as other modules receive them. */
  apis: Modules;
  /** A fresh service context (its own data handle) for the caller; null is anonymous. */
  ctxFor(user: AuthUser | null, options?: { ip?: string }): Ctx;
  /**
   * Calls the handler bound to an operation, as both transports do: the input is parsed with the
   * operation's request schema first (a test passes what a client would send; input the schema
   * refuses throws the ZodError, since no transport would reach the service with it).
   */
  call<N extends OperationName>(name: N, ctx: Ctx, input: SentInputOf<Operations[N]>): Promise<AnswerOf<N>>;
  /** Registers a user through the auth module's register operation (a real password hash). */
  createUser(options?: { username?: string; password?: string }): Promise<ServiceUser>;
  close(): Promise<void>;
}

/**
 * Builds the service modules for service-level tests: the app `buildApp` wires for `npm start`
 * (database, KV, bus, token verifier, modules), never listening. Rule tests call its operation
 * bindings and module APIs directly.
 */
export async function buildServices(overrides: ConfigOverrides = {}): Promise<Services> {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-services-'));
  let app: App | undefined;
  try {
    app = await buildApp(testConfig(dataDir, testDb, overrides), { modules: testModules, db: testDb.db });
    return servicesOn(app, testDb, dataDir);
  } catch (error) {
    await app?.close().catch(() => {});
    await testDb.drop();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

function servicesOn(app: App, testDb: TestDatabase, dataDir: string): Services {
  const ctxFor = (user: AuthUser | null, options: { ip?: string } = {}) =>
    app.ctx({ user, log: app.log, ip: options.ip ?? '127.0.0.1' });

  const call = async <N extends OperationName>(
    name: N,
    ctx: Ctx,
    input: SentInputOf<Operations[N]>,
  ): Promise<AnswerOf<N>> => {
    const binding = app.operations.get(name);
    if (!binding) throw new Error(`No module serves the operation ${name}.`);
    if (!binding.op.rest) {
      throw new Error(`${name} is socket-only: its handler needs a connection; test it over the gateway.`);
    }
    const parsed = binding.op.request ? binding.op.request.parse(input) : undefined;
    return (await binding.handler(ctx, parsed)) as AnswerOf<N>;
  };

  let closing: Promise<void> | undefined;
  return {
    db: app.db,
    kv: app.kv,
    tokens: app.tokens,
    testDb,
    apis: app.modules,
    ctxFor,
    call,
    async createUser({ username = uniqueUsername('s'), password = PASSWORD } = {}) {
      const tokens = await call('auth.register', ctxFor(null), {
        username,
        password,
        accept_terms: true,
        confirm_18_plus: true,
      });
      const user = await app.tokens.verify(tokens.access_token);
      return { user, username, password, tokens };
    },
    close() {
      closing ??= (async () => {
        try {
          await app.close();
        } finally {
          await testDb.drop();
          await rm(dataDir, { recursive: true, force: true });
        }
      })();
      return closing;
    },
  };
}

/**
 * The services for the enclosing `describe` (or the file): built in `beforeAll`, closed in
 * `afterAll`. Returns a function giving them, to be called inside hooks and tests.
 */
export function useServices(overrides: ConfigOverrides = {}): () => Services {
  let built: Services | undefined;
  beforeAll(async () => {
    built = await buildServices(overrides);
  });
  afterAll(async () => {
    await built?.close();
  });
  return () => {
    if (!built) {
      throw new Error('useServices builds the services in beforeAll: call it inside a hook or a test.');
    }
    return built;
  };
}
