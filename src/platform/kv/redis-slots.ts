/** Splitting multi-key work by Redis Cluster hash slot, where one command may touch only one slot. */
import calculateSlot from 'cluster-key-slot';

/**
 * The indexes of `keys` grouped by hash slot, in their order within each group. `prefix` is what
 * ioredis prepends (the namespace), which decides the slot of a key without a `{hash tag}`.
 */
export function indexesBySlot(keys: readonly string[], prefix: string): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, index) => {
    const slot = calculateSlot(prefix + key);
    const group = groups.get(slot);
    if (group) group.push(index);
    else groups.set(slot, [index]);
  });
  return [...groups.values()];
}

/**
 * Runs `run` once per slot group of `keys` (in parallel) and puts each group's answers back in
 * the order of `keys`: `run` answers one value per key of the group it was given.
 */
export async function perSlot<T>(
  keys: readonly string[],
  prefix: string,
  run: (keys: string[], indexes: number[]) => Promise<T[]>,
): Promise<T[]> {
  const answers = new Array<T>(keys.length);
  await Promise.all(
    indexesBySlot(keys, prefix).map(async (indexes) => {
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
