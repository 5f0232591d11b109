import type { Kv } from './kv.js';
import { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
import { RedisKv, type RedisKvOptions } from './redis-kv.js';
import type { RedisTopology } from './redis-topology.js';

export type { Kv } from './kv.js';
export { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
export { RedisKv, type RedisKvOptions } from './redis-kv.js';
export { type RedisTopology, redisTopology } from './redis-topology.js';

/**
 * Redis when a topology is given (connected and answering PING, or this rejects); otherwise the
 * in-process store, which is only correct while the service runs as a single node.
 */
export async function createKv(
  redis: RedisTopology | string | undefined,
  options: RedisKvOptions & MemoryKvOptions = {},
): Promise<Kv> {
  if (redis) return RedisKv.connect(redis, options);
  return new MemoryKv(options);
}
