import { ClusterKv } from './cluster-kv.js';
import type { Kv } from './kv.js';
import { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
import type { RedisKvOptions } from './redis-connection.js';
import { RedisKv } from './redis-kv.js';
import type { RedisTopology } from './redis-topology.js';

export { ClusterKv } from './cluster-kv.js';
export type { Kv } from './kv.js';
export { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
export { RedisBackedKv } from './redis-backed-kv.js';
export type { RedisKvOptions } from './redis-connection.js';
export { RedisKv } from './redis-kv.js';
export { type RedisTopology, redisTopology } from './redis-topology.js';

/**
 * The store for a Redis topology: ClusterKv on a Redis Cluster, RedisKv on one server or a
 * Sentinel-watched primary; connected and answering PING, or this rejects.
 */
export function connectRedis(
  redis: RedisTopology | string,
  options: RedisKvOptions = {},
): Promise<RedisKv | ClusterKv> {
  if (typeof redis !== 'string' && redis.kind === 'cluster') return ClusterKv.connect(redis, options);
  return RedisKv.connect(redis, options);
}

/**
 * Redis when a topology is given (see connectRedis); otherwise the in-process store, which is only
 * correct while the service runs as a single node.
 */
export async function createKv(
  redis: RedisTopology | string | undefined,
  options: RedisKvOptions & MemoryKvOptions = {},
): Promise<Kv> {
  if (redis) return connectRedis(redis, options);
  return new MemoryKv(options);
}
