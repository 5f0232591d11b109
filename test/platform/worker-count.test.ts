import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { coresOfCpuMax, workerCount } from '../../src/platform/cluster/supervisor.js';

describe('how many workers WORKERS starts', () => {
  it('starts the number WORKERS gives, whatever the host has', () => {
    expect(workerCount({ WORKERS: 3 }, '100000 100000')).toBe(3);
    expect(workerCount({ WORKERS: 1 }, undefined)).toBe(1);
  });

  it('starts one per core for auto, and no more than a cgroup CPU quota grants, rounded up', () => {
    const cores = availableParallelism();
    expect(workerCount({ WORKERS: 'auto' }, undefined)).toBe(cores);
    expect(workerCount({ WORKERS: 'auto' }, 'max 100000\n')).toBe(cores);
    expect(workerCount({ WORKERS: 'auto' }, '100000 100000\n')).toBe(1);
    expect(workerCount({ WORKERS: 'auto' }, '150000 100000')).toBe(Math.min(cores, 2));
    expect(workerCount({ WORKERS: 'auto' }, `${(cores + 8) * 100000} 100000`)).toBe(cores);
  });

  it('reads no quota from a missing, unlimited or malformed cpu.max', () => {
    for (const text of [undefined, '', 'max 100000', 'garbage', '0 100000', '-1 100000', '100000 0']) {
      expect(coresOfCpuMax(text), String(text)).toBe(Infinity);
    }
    expect(coresOfCpuMax('50000 100000')).toBe(1);
    expect(coresOfCpuMax('400000 100000')).toBe(4);
  });
});
