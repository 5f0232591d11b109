import { Gauge } from 'prom-client';
import type { Platform } from '../../platform/module.js';
import { probe } from './probe.js';

/**
 * What an operator alerts on besides the request metrics, read at scrape time: whether this
 * process reaches the database and the KV store (the checks /readyz runs), and its database pool.
 * In worker mode the host's workers are merged: a dependency is up only if every worker reaches
 * it (`min`), and the pools are summed.
 */
export function registerHealthMetrics({ db, kv, metrics }: Pick<Platform, 'db' | 'kv' | 'metrics'>): void {
  const registers = [metrics.registry];
  const dependencies = { database: () => db.ping(), kv: () => kv.ping() };
  new Gauge({
    name: 'atrium_dependency_up',
    help: 'Whether this process reaches the dependency (database, kv) within 2 s: 1 or 0, as /readyz checks it.',
    labelNames: ['dependency'] as const,
    aggregator: 'min',
    registers,
    async collect() {
      await Promise.all(
        Object.entries(dependencies).map(async ([dependency, check]) => {
          this.set({ dependency }, (await probe(check)) === 'ok' ? 1 : 0);
        }),
      );
    },
  });
  new Gauge({
    name: 'atrium_db_pool_connections',
    help: 'Database connections of this process by state: in_use (lent to a statement or transaction) or idle.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const usage = db.poolUsage();
      this.set({ state: 'in_use' }, usage.inUse);
      this.set({ state: 'idle' }, usage.idle);
    },
  });
  new Gauge({
    name: 'atrium_db_pool_max_connections',
    help: 'The most connections the pool opens (DATABASE_POOL_SIZE; 1 for the embedded database).',
    registers,
    collect() {
      this.set(db.poolSize);
    },
  });
  new Gauge({
    name: 'atrium_db_pool_waiting',
    help: 'Callers waiting for a pooled database connection now: above zero, the pool is saturated.',
    registers,
    collect() {
      this.set(db.poolUsage().waiting);
    },
  });
}
