import { getHeapStatistics } from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  HEAP_GROWTH_BYTES,
  IDLE_CHECK_INTERVAL_MS,
  IdleCollection,
  QUIET_UTILIZATION,
} from '../../src/platform/idle-collection.js';

/** A node whose loop utilization and heap the test sets, counting the collections it runs. */
function node(start: { utilization: number; heap: number }) {
  const state = { ...start, collections: 0 };
  const idle = new IdleCollection({
    utilization: () => state.utilization,
    heapUsed: () => state.heap,
    collect: async () => {
      state.collections += 1;
      state.heap = 30 * 1024 * 1024;
    },
  });
  return { state, idle };
}

const MiB = 1024 * 1024;

describe('the idle collection', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects on its first look when the node was quiet, then only after the heap grew again', async () => {
    const { state, idle } = node({ utilization: QUIET_UTILIZATION / 2, heap: 40 * MiB });
    expect(await idle.check()).toBe(true);
    expect(state.collections).toBe(1);
    // The collection left 30 MiB; half a MiB of growth is not worth a pause.
    state.heap = 30.5 * MiB;
    expect(await idle.check()).toBe(false);
    state.heap = 30 * MiB + HEAP_GROWTH_BYTES;
    expect(await idle.check()).toBe(true);
    expect(state.collections).toBe(2);
  });

  it('never collects while the node is busy, however much the heap grew', async () => {
    const { state, idle } = node({ utilization: QUIET_UTILIZATION, heap: 200 * MiB });
    expect(await idle.check()).toBe(false);
    state.utilization = 0.5;
    expect(await idle.check()).toBe(false);
    expect(state.collections).toBe(0);
  });

  it('looks once a minute from start() and no more after stop()', async () => {
    vi.useFakeTimers();
    const { state, idle } = node({ utilization: 0, heap: 40 * MiB });
    idle.start();
    await vi.advanceTimersByTimeAsync(IDLE_CHECK_INTERVAL_MS - 1);
    expect(state.collections).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(state.collections).toBe(1);
    state.heap = 40 * MiB;
    await idle.stop();
    await vi.advanceTimersByTimeAsync(IDLE_CHECK_INTERVAL_MS * 3);
    expect(state.collections).toBe(1);
  });

  it("frees the process's garbage through the inspector by default", async () => {
    let garbage: object[] | undefined = Array.from({ length: 300_000 }, (_, i) => ({ i, text: `item ${i}` }));
    const withGarbage = getHeapStatistics().used_heap_size;
    expect(garbage.length).toBe(300_000);
    garbage = undefined;
    const idle = new IdleCollection({ utilization: () => 0 });
    expect(await idle.check()).toBe(true);
    // 300,000 objects with their strings are well over 10 MiB.
    expect(withGarbage - getHeapStatistics().used_heap_size).toBeGreaterThan(10 * MiB);
  });
});
