/**
 * How the service reaches Redis: one server (REDIS_URL), a primary watched by Sentinels
 * (REDIS_SENTINELS + REDIS_SENTINEL_NAME) or a Redis Cluster (REDIS_CLUSTER_NODES). Exactly one
 * of them, or none for the in-process store (docs/scaling.md).
 */
import { type HostPort, parseHostPorts } from '../config-fields.js';

export interface ServerTopology {
  kind: 'server';
  url: string;
}

export interface SentinelTopology {
  kind: 'sentinel';
  sentinels: HostPort[];
  name: string;
  password?: string;
  sentinelPassword?: string;
}

export interface ClusterTopology {
  kind: 'cluster';
  nodes: HostPort[];
  password?: string;
}

export type RedisTopology = ServerTopology | SentinelTopology | ClusterTopology;

/** The Redis settings as config.ts parses them (declared there, next to REDIS_URL). */
export interface RedisSettings {
  REDIS_URL?: string | undefined;
  REDIS_SENTINELS?: string | undefined;
  REDIS_SENTINEL_NAME?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
  REDIS_CLUSTER_NODES?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
}

const ALTERNATIVES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

/**
 * What contradicts itself in the Redis settings, one sentence each, for a ConfigError at startup:
 * a setting that only means something with another one, or two ways to reach Redis at once.
 */
export function redisSettingsProblems(settings: RedisSettings): string[] {
  const problems: string[] = [];
  const given = ALTERNATIVES.filter((name) => settings[name] !== undefined);
  if (given.length > 1) {
    problems.push(
      `${given.join(' and ')} are alternative ways to reach Redis: set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES`,
    );
  }
  const sentinels = settings.REDIS_SENTINELS !== undefined;
  if (sentinels && settings.REDIS_SENTINEL_NAME === undefined) {
    problems.push(
      'REDIS_SENTINELS needs REDIS_SENTINEL_NAME, the name the Sentinels monitor the primary under',
    );
  }
  for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD'] as const) {
    if (!sentinels && settings[name] !== undefined)
      problems.push(`${name} is only used with REDIS_SENTINELS`);
  }
  if (settings.REDIS_PASSWORD !== undefined && !sentinels && settings.REDIS_CLUSTER_NODES === undefined) {
    problems.push(
      'REDIS_PASSWORD is only used with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL the password goes in the URL)',
    );
  }
  return problems;
}

/** The topology the settings describe (checked by redisSettingsProblems first); undefined: none. */
export function redisTopology(settings: RedisSettings): RedisTopology | undefined {
  const password = settings.REDIS_PASSWORD ? { password: settings.REDIS_PASSWORD } : {};
  if (settings.REDIS_URL) return { kind: 'server', url: settings.REDIS_URL };
  if (settings.REDIS_SENTINELS && settings.REDIS_SENTINEL_NAME) {
    return {
      kind: 'sentinel',
      sentinels: parseHostPorts(settings.REDIS_SENTINELS) ?? [],
      name: settings.REDIS_SENTINEL_NAME,
      ...password,
      ...(settings.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: settings.REDIS_SENTINEL_PASSWORD } : {}),
    };
  }
  if (settings.REDIS_CLUSTER_NODES) {
    return { kind: 'cluster', nodes: parseHostPorts(settings.REDIS_CLUSTER_NODES) ?? [], ...password };
  }
  return undefined;
}
