import { z } from 'zod';
import { mergeParts } from '../protocol/parts.js';
import { authConfig } from './modules/auth/auth.config.js';
import { chatConfig } from './modules/chat/chat.config.js';
import { consoleConfig } from './modules/console/console.config.js';
import { discoveryConfig } from './modules/discovery/discovery.config.js';
import { economyConfig } from './modules/economy/economy.config.js';
import { extensionsConfig } from './modules/extensions/extensions.config.js';
import { gameServersConfig } from './modules/gameservers/gameservers.config.js';
import { groupsConfig } from './modules/groups/groups.config.js';
import { leaderboardsConfig } from './modules/leaderboards/leaderboards.config.js';
import { moderationConfig } from './modules/moderation/moderation.config.js';
import { notificationsConfig } from './modules/notifications/notifications.config.js';
import { partiesConfig } from './modules/parties/parties.config.js';
import { presenceConfig } from './modules/presence/presence.config.js';
import { socialConfig } from './modules/social/social.config.js';
import { webhooksConfig } from './modules/webhooks/webhooks.config.js';
import { worldsConfig } from './modules/worlds/worlds.config.js';
import { redisSettingsProblems, redisTopology } from './platform/kv/redis-topology.js';
import { platformConfig, secretVariables } from './platform/platform-config.js';
import { StartupError } from './platform/startup-error.js';

/**
 * Every setting comes from the environment and is parsed here, once, at startup.
 * Empty strings count as "not set" so that `FOO=` in a compose file falls back to the default.
 */

/**
 * Every setting, by who declares it: the platform in src/platform/platform-config.ts, each domain
 * in its folder's `<domain>.config.ts` (docs/modules.md); a domain with settings adds its import
 * and a line here. The parts are imported directly rather than read from the module list because
 * modules import this file (the settings module shows the parts), and the list would make that a
 * cycle.
 */
export const configParts = {
  platform: platformConfig,
  auth: authConfig,
  presence: presenceConfig,
  social: socialConfig,
  worlds: worldsConfig,
  discovery: discoveryConfig,
  groups: groupsConfig,
  chat: chatConfig,
  moderation: moderationConfig,
  gameservers: gameServersConfig,
  economy: economyConfig,
  extensions: extensionsConfig,
  leaderboards: leaderboardsConfig,
  notifications: notificationsConfig,
  webhooks: webhooksConfig,
  parties: partiesConfig,
  console: consoleConfig,
};

export const configSchema = z.object(mergeParts(configParts));

export type Config = z.infer<typeof configSchema>;

/** Every module's settings in what the module kit hands each module's setup (platform.config). */
declare module './platform/module.js' {
  interface ServiceConfig extends Config {}
}

export { StartupError };

export class ConfigError extends StartupError {
  override name = 'ConfigError';
}

/**
 * Production mode: a PostgreSQL server and a shared Redis, so several processes behave as one
 * service. Without them the embedded database and the in-process KV belong to one process.
 */
export function isProductionMode(config: Config): boolean {
  return config.DATABASE_URL !== undefined && hasSharedRedis(config);
}

/**
 * Defaults that depend on the mode, for settings the environment left unset: in production mode
 * `serve` uses every core of the host (WORKERS=auto), as Nakama does; embedded mode keeps the
 * field's default, one process, since its database and KV belong to one process.
 */
function withModeDefaults(config: Config, input: Readonly<Record<string, string>>): Config {
  if (input.WORKERS === undefined && isProductionMode(config)) return { ...config, WORKERS: 'auto' };
  return config;
}

/** Settings that are each valid but not together, as one sentence each for the operator. */
function conflicts(config: Config): string[] {
  const problems = redisSettingsProblems(config);
  if (config.WORKERS !== 1 && !isProductionMode(config)) {
    problems.push(
      `WORKERS=${config.WORKERS} needs DATABASE_URL and a shared Redis (REDIS_URL, REDIS_SENTINELS or ` +
        'REDIS_CLUSTER_NODES): worker processes share only a PostgreSQL and a Redis, while the embedded ' +
        'database and the in-process KV belong to one process (set both, or WORKERS=1)',
    );
  }
  return problems;
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
  if (parsed.success) {
    const config = withModeDefaults(parsed.data, input);
    const problems = conflicts(config);
    if (problems.length === 0) return config;
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0]);
    const shown = secretVariables.has(name) ? 'value hidden' : `got ${JSON.stringify(input[name])}`;
    return `${name} ${issue.message} (${shown})`;
  });
  throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
}

/**
 * Whether the service shares a Redis with its other processes (REDIS_URL, REDIS_SENTINELS or
 * REDIS_CLUSTER_NODES) rather than keeping presence, counters and events in process: with the
 * database, what running more than one process needs.
 */
export function hasSharedRedis(config: Config): boolean {
  return redisTopology(config) !== undefined;
}

/** A config for tests and tools: defaults plus overrides, without reading process.env. */
export function configFrom(overrides: Partial<Record<keyof Config, string | number | boolean>> = {}): Config {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) env[key] = String(value);
  }
  return loadConfig(env);
}
