import { z } from 'zod';
import { trustProxySetting } from './platform/http-proxy.js';
import { StartupError } from './platform/startup-error.js';

/**
 * Every setting comes from the environment and is parsed here, once, at startup.
 * Empty strings count as "not set" so that `FOO=` in a compose file falls back to the default.
 */

const intInRange = (fallback: number, min: number, max: number) => {
  const allowed = `must be an integer from ${min} to ${max}`;
  return z.coerce
    .number({ error: allowed })
    .int(allowed)
    .min(min, allowed)
    .max(max, allowed)
    .default(fallback);
};
const positiveInt = (fallback: number, max = 2 ** 31 - 1) => intInRange(fallback, 1, max);
const port = (fallback: number) => intInRange(fallback, 0, 65535);

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be one of true, false, 1, 0, yes, no' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .default(fallback);

const url = (protocols: string[]) =>
  z
    .string()
    .refine(
      (value) => {
        try {
          return protocols.includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
    )
    .optional();

const pem = (label: string) =>
  z
    .string()
    .transform((value) => value.replaceAll('\\n', '\n'))
    .refine((value) => value.includes(`-----BEGIN ${label}-----`), {
      message: `must be PEM text containing -----BEGIN ${label}-----`,
    })
    .optional();

/** A JSON array of one or more non-empty strings (GAMESERVER_COMMAND's exact form). */
function isArgumentList(value: string): boolean {
  try {
    const parsed: unknown = JSON.parse(value);
    return (
      Array.isArray(parsed) && parsed.length > 0 && parsed.every((a) => typeof a === 'string' && a !== '')
    );
  } catch {
    return false;
  }
}

export const configSchema = z.object({
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
  REDIS_URL: url(['redis:', 'rediss:']),
  /** Prepended to every Redis key and channel, so several deployments can share one Redis. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_.-]{0,64}$/, 'must be 0-64 of A-Z a-z 0-9 : _ . -')
    .default('atrium:'),
  /** A Redis command not answered within this time fails (503 to the caller) instead of waiting. */
  REDIS_COMMAND_TIMEOUT_MS: positiveInt(500, 60_000),
  MIGRATE_ON_START: bool(true),
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
  SHUTDOWN_GRACE_MS: positiveInt(10_000, 300_000),
  ACCESS_TOKEN_TTL_SECONDS: positiveInt(900, 86_400),
  REFRESH_TOKEN_TTL_SECONDS: positiveInt(30 * 86_400, 365 * 86_400),
  JWT_ISSUER: z.string().min(1).default('atrium'),
  /** PKCS#8 PEM of the RS256 signing key; without it keys are generated under DATA_DIR/keys. */
  JWT_SIGNING_KEY_PEM: pem('PRIVATE KEY'),
  JWT_SIGNING_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 . _ -')
    .optional(),
  /** Extra SPKI PEM public keys still accepted for verification, for key rotation. */
  JWT_VERIFY_KEYS_PEM: pem('PUBLIC KEY'),
  LOGIN_MAX_FAILURES: positiveInt(5, 1000),
  LOGIN_LOCKOUT_SECONDS: positiveInt(900, 86_400),
  LOGIN_IP_MAX_ATTEMPTS: positiveInt(30, 1_000_000),
  LOGIN_IP_WINDOW_SECONDS: positiveInt(60, 86_400),
  REGISTER_IP_MAX_ATTEMPTS: positiveInt(20, 1_000_000),
  REGISTER_IP_WINDOW_SECONDS: positiveInt(3600, 86_400),
  PRESENCE_TTL_SECONDS: positiveInt(60, 86_400),
  /** How often coalesced last_seen_at updates are written to the database. */
  LAST_SEEN_FLUSH_MS: positiveInt(5000, 600_000),
  /**
   * How long status messages may wait to be written to the database: each user's latest within
   * the window goes out in one statement for all (readers see it at once through the KV store).
   */
  STATUS_FLUSH_MS: positiveInt(200, 60_000),
  /**
   * A node that has not renewed its lease for this long counts as dead: another node ends the
   * presence of its users. Renewed every third of it, so keep it well above any expected pause.
   */
  NODE_LEASE_SECONDS: positiveInt(10, 3600),
  DM_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  DM_RATE_LIMIT_WINDOW_SECONDS: positiveInt(10, 86_400),
  /**
   * Per-account limits (docs/limits.md). Count quotas answer 409 QUOTA_EXCEEDED with `limit`;
   * rates answer 429 RATE_LIMITED with Retry-After, shared by every node through Redis.
   */
  MAX_WORLDS_PER_USER: positiveInt(100, 1_000_000),
  MAX_ROOMS_PER_WORLD: positiveInt(100, 10_000),
  MAX_GROUPS_PER_USER: positiveInt(20, 10_000),
  /**
   * Discovery (docs/discovery.md): visits reach the counters at the next fold (what a kill -9 can
   * leave uncounted until a node folds again), and popular and trending rank a snapshot at most
   * this old.
   */
  DISCOVERY_FOLD_INTERVAL_SECONDS: positiveInt(5, 3600),
  DISCOVERY_RANK_INTERVAL_SECONDS: positiveInt(60, 3600),
  GROUP_MAX_MEMBERS: positiveInt(100, 100_000),
  GROUP_MAX_MEMBERSHIPS_PER_USER: positiveInt(100, 10_000),
  /** Live chunk payload bytes per world: the sum of its live chunks' current payloads. */
  MAX_WORLD_CONTENT_BYTES: positiveInt(256 * 1024 * 1024, 2 ** 50),
  /** Authenticated sockets one user may hold at once, across every node; one more is closed with 4409. */
  WS_MAX_SOCKETS_PER_USER: positiveInt(10, 10_000),
  /** Message reports one user may file per window. */
  REPORT_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  REPORT_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /** Friend requests and follows one user may make per window (together); group joins and requests apart. */
  SOCIAL_RATE_LIMIT_COUNT: positiveInt(30, 100_000),
  SOCIAL_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /** Worlds (and groups) one user may create per window. */
  CREATE_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  CREATE_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /**
   * Revision history (docs/worlds.md, "Retention"): revisions superseded longer ago than this are
   * pruned, and each chunk keeps at most WORLD_HISTORY_MAX_REVISIONS; a rollback before the
   * world's horizon answers 409 with it. The pruning pass runs on every node at this interval.
   */
  WORLD_HISTORY_RETENTION_SECONDS: positiveInt(7 * 86_400, 10 * 365 * 86_400),
  WORLD_HISTORY_MAX_REVISIONS: positiveInt(32, 1_000_000),
  WORLD_HISTORY_PRUNE_INTERVAL_SECONDS: positiveInt(60, 86_400),
  /** What the text filter does with disallowed words in a message: mask them, or refuse the message (422). */
  DM_FILTER_MODE: z.enum(['mask', 'reject'], { error: 'must be one of mask, reject' }).default('mask'),
  /**
   * Missed-event recovery: how many recent events of each user's stream and each chat are kept for
   * replay to a reconnecting client, and for how long after the latest (docs/recovery.md).
   */
  EVENT_HISTORY_SIZE: positiveInt(1000, 100_000),
  EVENT_HISTORY_TTL_SECONDS: positiveInt(600, 86_400),
  /** Where game servers run: `local` child processes, or `agones` GameServers (docs/gameservers.md). */
  GAMESERVER_SPAWNER: z.enum(['local', 'agones'], { error: 'must be one of local, agones' }).default('local'),
  /**
   * The local spawner's program: a JSON array of arguments (`["node","server.js"]`) or words split
   * on spaces; never run through a shell. Unset: the reference server in examples/gameserver/.
   */
  GAMESERVER_COMMAND: z
    .string()
    .min(1)
    .refine((value) => !value.startsWith('[') || isArgumentList(value), {
      message: 'must be a JSON array of non-empty strings when it starts with [',
    })
    .optional(),
  GAMESERVER_READY_TIMEOUT_MS: positiveInt(30_000, 3_600_000),
  /** How many game servers the local spawner runs at once on this node. */
  GAMESERVER_MAX_RUNNING: positiveInt(8, 10_000),
  /** Players a server is given before a join starts another one. */
  GAMESERVER_MAX_PLAYERS: positiveInt(32, 100_000),
  /** The internal API's base URL as game servers reach it; default http://<HOST>:<HTTP port>. */
  GAMESERVER_API_URL: url(['http:', 'https:']),
  /** The gateway's URL as game servers reach it (`--ws-url`); default ws://<HOST>:<WS port>/ws. */
  GAMESERVER_WS_URL: url(['ws:', 'wss:']),
  /** The host local servers tell players to connect to (their PUBLIC_HOST); default 127.0.0.1. */
  GAMESERVER_PUBLIC_HOST: z
    .string()
    .regex(
      /^[A-Za-z0-9.-]{1,253}$|^\[[0-9A-Fa-f:.]{2,45}\]$/,
      'must be a host name, an IPv4 address or a [bracketed] IPv6 address',
    )
    .optional(),
  /** A server with no players and no join reservation for this long is stopped. */
  GAMESERVER_IDLE_STOP_SECONDS: positiveInt(120, 86_400),
  /** Live game servers (starting or ready) one user may have caused at once. */
  GAMESERVER_MAX_LIVE_PER_USER: positiveInt(3, 10_000),
  /** Game servers one user may cause to start (by a join or as the owner) per window. */
  GAMESERVER_SPAWN_RATE_LIMIT_COUNT: positiveInt(3, 100_000),
  GAMESERVER_SPAWN_RATE_LIMIT_WINDOW_SECONDS: positiveInt(600, 86_400),
  /** How long a stopped local server may take to exit after SIGTERM before it is killed. */
  GAMESERVER_STOP_GRACE_MS: positiveInt(5_000, 600_000),
  /** The agones spawner (docs/gameservers-agones.md): where, and how, GameServers are made. */
  GAMESERVER_AGONES_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .default('default'),
  GAMESERVER_AGONES_MODE: z
    .enum(['create', 'allocate'], { error: 'must be one of create, allocate' })
    .default('create'),
  GAMESERVER_AGONES_FLEET: z.string().min(1).max(253).default('atrium-gameservers'),
  /** `create`: a GameServer template file (YAML or JSON); default deploy/agones/gameserver-template.yaml. */
  GAMESERVER_AGONES_TEMPLATE: z.string().min(1).optional(),
  GAMESERVER_AGONES_CONTAINER: z.string().min(1).max(63).optional(),
  GAMESERVER_AGONES_POLL_MS: positiveInt(500, 60_000),
  GAMESERVER_AGONES_REQUEST_TIMEOUT_MS: positiveInt(10_000, 600_000),
  /** The economy (docs/economy.md): the platform's fee on a sale, in basis points of its price (3000: 30%). */
  ECONOMY_FEE_BPS: intInRange(3000, 0, 10_000),
  /** How long a sale's earnings wait in creator_pending (the refund window) before they are available. */
  ECONOMY_HOLD_SECONDS: intInRange(7 * 86_400, 0, 365 * 86_400),
  /** How often every node releases the holds that came due. */
  ECONOMY_RELEASE_INTERVAL_SECONDS: positiveInt(60, 86_400),
  /** The smallest payout a creator may request, in minor units. */
  ECONOMY_PAYOUT_MINIMUM: positiveInt(1000, 1_000_000_000_000),
  /** How long a write's stored answer replays for a retry with its Idempotency-Key, at least. */
  ECONOMY_IDEMPOTENCY_TTL_HOURS: positiveInt(24, 24 * 365),
  /** Catalog items, listings and payout requests one user may create per window (together). */
  ECONOMY_CREATE_RATE_LIMIT_COUNT: positiveInt(30, 100_000),
  ECONOMY_CREATE_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
});

export type Config = z.infer<typeof configSchema>;

/** Variables that may carry credentials: an error message names them but never echoes their value. */
const secretVariables = new Set(['DATABASE_URL', 'REDIS_URL', 'JWT_SIGNING_KEY_PEM', 'JWT_VERIFY_KEYS_PEM']);

export { StartupError };

export class ConfigError extends StartupError {
  override name = 'ConfigError';
}

/**
 * Parses the environment into a Config. A bad value throws a ConfigError whose message is one line
 * naming each bad variable and what it allows, so an operator can fix it without reading code.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = Object.keys(configSchema.shape);
  const input: Record<string, string> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value.trim();
  }
  const parsed = configSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0]);
    const shown = secretVariables.has(name) ? 'value hidden' : `got ${JSON.stringify(input[name])}`;
    return `${name} ${issue.message} (${shown})`;
  });
  throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
}

/** A config for tests and tools: defaults plus overrides, without reading process.env. */
export function configFrom(overrides: Partial<Record<keyof Config, string | number | boolean>> = {}): Config {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) env[key] = String(value);
  }
  return loadConfig(env);
}
