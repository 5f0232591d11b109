/**
 * The platform's own part of the configuration, declared here so that the platform's code reads
 * its settings without importing src/config.ts, which merges this part with every module's
 * (docs/modules.md). Platform files take PlatformConfig, or the Pick of it they read.
 */
import { z } from 'zod';
import {
  bool,
  hostPortList,
  intInRange,
  pem,
  port,
  positiveInt,
  processCount,
  url,
} from './config-fields.js';
import { trustProxySetting } from './http-proxy.js';

/** The platform's settings: listeners, storage, the gateway, tokens, event history. */
export const platformConfig = {
  HOST: z.string().min(1).default('127.0.0.1'),
  HTTP_PORT: port(8080),
  WS_PORT: port(8081),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  /** Pool size for DATABASE_URL; the embedded database always uses one connection. */
  DATABASE_POOL_SIZE: positiveInt(10, 200),
  /**
   * With DATABASE_URL: how long one query may take, enforced by the client (a silent network
   * fails fast) and by the server (statement_timeout); 0 turns both off, e.g. for a long migration.
   */
  DATABASE_QUERY_TIMEOUT_MS: intInRange(1000, 0, 3_600_000),
  /** With DATABASE_URL: how long opening a database connection may take before the request fails. */
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt(1000, 600_000),
  /** One Redis server; REDIS_SENTINELS and REDIS_CLUSTER_NODES are the alternatives (docs/scaling.md). */
  REDIS_URL: url(['redis:', 'rediss:']),
  /** Sentinels to ask for the current primary, `host:port,host:port`; with REDIS_SENTINEL_NAME. */
  REDIS_SENTINELS: hostPortList(),
  /** The name the Sentinels monitor the primary under (`sentinel monitor <name> ...`). */
  REDIS_SENTINEL_NAME: z.string().min(1).optional(),
  /** The Sentinels' own password (their `requirepass`), when they have one. */
  REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  /** Some nodes of a Redis Cluster, `host:port,host:port`: the rest are discovered from them. */
  REDIS_CLUSTER_NODES: hostPortList(),
  /** The password of the Redis servers reached through REDIS_SENTINELS or REDIS_CLUSTER_NODES. */
  REDIS_PASSWORD: z.string().min(1).optional(),
  /** Prepended to every Redis key and channel, so several deployments can share one Redis. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_.-]{0,64}$/, 'must be 0-64 of A-Z a-z 0-9 : _ . -')
    .default('atrium:'),
  /** A Redis command not answered within this time fails (503 to the caller) instead of waiting. */
  REDIS_COMMAND_TIMEOUT_MS: positiveInt(500, 60_000),
  MIGRATE_ON_START: bool(true),
  /**
   * Worker processes `serve` runs on this host, sharing HTTP_PORT and WS_PORT (docs/scaling.md);
   * `auto` is one per available core. More than one needs production mode. Unset, it is `auto` in
   * production mode and 1 in embedded mode (src/config.ts, withModeDefaults).
   */
  WORKERS: processCount(256),
  /**
   * In worker mode, a worker whose event loop sent no sign of life for this long (a synchronous
   * loop that never ends) is killed and started again; 0 turns the check off.
   */
  WORKER_STALL_TIMEOUT_SECONDS: intInRange(30, 0, 3600),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      error: 'must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  HTTP_BODY_LIMIT_BYTES: positiveInt(2 * 1024 * 1024, 64 * 1024 * 1024),
  /** Which proxies may report the client address in X-Forwarded-For; see docs/accounts.md. */
  TRUST_PROXY: trustProxySetting,
  WS_MAX_FRAME_BYTES: positiveInt(64 * 1024, 16 * 1024 * 1024),
  WS_IDLE_TIMEOUT_SECONDS: intInRange(120, 8, 960),
  /** A connection must send a valid auth frame within this time or it is closed with 4401. */
  WS_AUTH_TIMEOUT_MS: positiveInt(10_000, 300_000),
  /** Frames a connection may send per second; above it frames are refused, far above it the connection closes. */
  WS_MAX_FRAMES_PER_SECOND: positiveInt(50, 100_000),
  WS_MAX_SUBSCRIPTIONS: positiveInt(1000, 100_000),
  /** Bytes waiting to be written to one slow client before it is disconnected with 4408. */
  WS_MAX_BUFFERED_BYTES: positiveInt(1024 * 1024, 256 * 1024 * 1024),
  /** Authenticated sockets one user may hold at once, across every node; one more is closed with 4409. */
  WS_MAX_SOCKETS_PER_USER: positiveInt(10, 10_000),
  /**
   * Setup frames that use the database pool (chat.join, presence.subscribe, chunks.subscribe) one
   * node runs at once; the rest wait their turn. Below DATABASE_POOL_SIZE, so that when another
   * node's clients all reconnect here, the requests of clients already connected keep a share of the pool.
   */
  WS_SETUP_CONCURRENCY: positiveInt(4, 1000),
  /**
   * Auth frames one node runs at once; the rest wait their turn. They take no pooled connection,
   * only a few KV round trips each, so this is what bounds how fast a node authenticates sockets.
   */
  WS_AUTH_CONCURRENCY: positiveInt(64, 10_000),
  /** Setup frames (both gates) that may wait for their turn on one node; one more is refused with SERVICE_UNAVAILABLE. */
  WS_SETUP_QUEUE: positiveInt(10_000, 1_000_000),
  SHUTDOWN_GRACE_MS: positiveInt(10_000, 300_000),
  ACCESS_TOKEN_TTL_SECONDS: positiveInt(900, 86_400),
  JWT_ISSUER: z.string().min(1).default('atrium'),
  /** PKCS#8 PEM of the RS256 signing key; without it keys are generated under DATA_DIR/keys. */
  JWT_SIGNING_KEY_PEM: pem('PRIVATE KEY'),
  JWT_SIGNING_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 . _ -')
    .optional(),
  /** Extra SPKI PEM public keys still accepted for verification, for key rotation. */
  JWT_VERIFY_KEYS_PEM: pem('PUBLIC KEY'),
  /**
   * Missed-event recovery: how many recent events of each user's stream and each chat are kept for
   * replay to a reconnecting client, and for how long after the latest (docs/recovery.md).
   */
  EVENT_HISTORY_SIZE: positiveInt(1000, 100_000),
  EVENT_HISTORY_TTL_SECONDS: positiveInt(600, 86_400),
};

export type PlatformConfig = z.infer<z.ZodObject<typeof platformConfig>>;

/**
 * Variables that may carry credentials: an error message names them but never echoes their value,
 * and the admins' view of the configuration redacts them (src/modules/settings).
 */
export const secretVariables: ReadonlySet<string> = new Set([
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'JWT_SIGNING_KEY_PEM',
  'JWT_VERIFY_KEYS_PEM',
]);
