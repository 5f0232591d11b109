import type { Kv } from './kv.js';
import { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
import { RedisKv, type RedisKvOptions } from './redis-kv.js';

export type { Kv } from './kv.js';
export { MemoryKv, type MemoryKvOptions } from './memory-kv.js';
export { RedisKv, type RedisKvOptions } from './redis-kv.js';

/**
 * Redis when `redisUrl` is given (connected and answering PING, or this rejects); otherwise the
 * in-process store, which is only correct while the service runs as a single node.
 */
export async function createKv(
  redisUrl: string | undefined,
  options: RedisKvOptions & MemoryKvOptions = {},
): Promise<Kv> {
  if (redisUrl) return RedisKv.connect(redisUrl, options);
  return new MemoryKv(options);
}
