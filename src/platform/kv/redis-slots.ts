/** Splitting multi-key work by Redis Cluster hash slot, where one command may touch only one slot. */
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import type { Peeked } from './kv.js';

/**
 * The indexes of `keys` split by `bucketOf` each key's hash slot, in their order within each
 * bucket. `prefix` is what ioredis prepends (the namespace), which decides the slot of a key
 * without a `{hash tag}`.
 */
function indexesBy<B>(keys: readonly string[], prefix: string, bucketOf: (slot: number) => B): number[][] {
  const buckets = new Map<B, number[]>();
  keys.forEach((key, index) => {
    const bucket = bucketOf(calculateSlot(prefix + key));
    const indexes = buckets.get(bucket);
    if (indexes) indexes.push(index);
    else buckets.set(bucket, [index]);
  });
  return [...buckets.values()];
}

/** The indexes of `keys` split by hash slot: what one script or multi-key command may touch. */
export function indexesBySlot(keys: readonly string[], prefix: string): number[][] {
  return indexesBy(keys, prefix, (slot) => slot);
}

/**
 * The indexes of `keys` split by the nodes serving their slot: what one Cluster pipeline of
 * single-key commands may hold, so a few thousand keys cost a pipeline per primary rather than a
 * round trip per slot. A slot whose nodes are not known yet is a bucket of its own.
 */
export function indexesByNode(cluster: Cluster, keys: readonly string[], prefix: string): number[][] {
  return indexesBy(keys, prefix, (slot) => cluster.slots[slot]?.join(',') ?? `slot ${slot}`);
}

/**
 * Runs `run` once per hash slot of `keys` (in parallel) and puts each slot's answers back in
 * the order of `keys`: `run` answers one value per key it was given.
 */
export function perSlot<T>(
  keys: readonly string[],
  prefix: string,
  run: (keys: string[], indexes: number[]) => Promise<T[]>,
): Promise<T[]> {
  return perBucket(keys, indexesBySlot(keys, prefix), run);
}

async function perBucket<T>(
  keys: readonly string[],
  buckets: number[][],
  run: (keys: string[], indexes: number[]) => Promise<T[]>,
): Promise<T[]> {
  const answers = new Array<T>(keys.length);
  await Promise.all(
    buckets.map(async (indexes) => {
      const values = await run(
        indexes.map((index) => keys[index] as string),
        indexes,
      );
      indexes.forEach((index, i) => {
        answers[index] = values[i] as T;
      });
    }),
  );
  return answers;
}

/** A pipeline's answers, or its first command's error. */
async function pipelined(pipeline: ReturnType<Cluster['pipeline']>): Promise<unknown[]> {
  const results = (await pipeline.exec()) ?? [];
  const failure = results.find(([error]) => error);
  if (failure) throw failure[0];
  return results.map(([, value]) => value);
}

/** Kv.msetWithTtl on a Cluster: a pipeline of SET ... PX per primary. */
export async function setManyOnCluster(
  cluster: Cluster,
  entries: readonly (readonly [string, string])[],
  prefix: string,
  ttlMs: number,
): Promise<void> {
  const keys = entries.map(([key]) => key);
  await perBucket(keys, indexesByNode(cluster, keys, prefix), (_, indexes) => {
    const pipeline = cluster.pipeline();
    for (const index of indexes) {
      const [key, value] = entries[index] as readonly [string, string];
      pipeline.set(key, value, 'PX', ttlMs);
    }
    return pipelined(pipeline);
  });
}

/** Kv.expireMany on a Cluster: a pipeline of PEXPIRE per primary, answers in the keys' order. */
export async function expireManyOnCluster(
  cluster: Cluster,
  keys: readonly string[],
  prefix: string,
  ttlMs: number,
): Promise<boolean[]> {
  const existed = await perBucket(keys, indexesByNode(cluster, keys, prefix), (nodeKeys) => {
    const pipeline = cluster.pipeline();
    for (const key of nodeKeys) pipeline.pexpire(key, ttlMs);
    return pipelined(pipeline);
  });
  return existed.map((flag) => flag === 1);
}

/**
 * Kv.setAndPeek on a Cluster. The key, the peeked key and the channel are in different slots, so
 * three commands: the write first, then the count, which keeps Kv's promise (a subscriber not
 * counted subscribed after the write, so it reads the new value).
 */
export async function setAndPeekOnCluster(
  cluster: Cluster,
  key: string,
  value: string,
  ttlMs: number,
  peekKey: string,
  hasSubscribers: () => Promise<boolean>,
): Promise<Peeked> {
  await cluster.set(key, value, 'PX', ttlMs);
  const [listened, read] = await Promise.all([hasSubscribers(), cluster.get(peekKey)]);
  return { listened, value: listened ? read : null };
}
