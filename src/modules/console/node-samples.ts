import { randomUUID } from 'node:crypto';
import type { Gateway } from '../../platform/gateway/gateway.js';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import type { Metrics } from '../../platform/metrics.js';

/**
 * The overview's numbers: each node samples its own metrics (src/platform/metrics.ts) at an
 * interval, turns counters into rates, and keeps its recent samples in the KV store under its
 * own key with a short TTL, so any node can show every live node and a node that died drops out
 * within a few intervals.
 */

export interface NodeSample {
  /** Ms since the epoch. */
  at: number;
  httpPerSecond: number;
  http4xxPerSecond: number;
  http5xxPerSecond: number;
  framesPerSecond: number;
  errorFramesPerSecond: number;
  sockets: number;
  /** Users with an authenticated socket on the node. */
  users: number;
}

export interface NodeSnapshot {
  nodeId: string;
  startedAt: number;
  samples: NodeSample[];
}

/** Samples kept per node: an hour at the default 10 s, enough for a trend. */
export const SAMPLES_KEPT = 360;
const NODES_KEY = 'console:nodes';
const nodeKey = (nodeId: string) => `console:node:${nodeId}`;

interface Totals {
  at: number;
  http: number;
  http4xx: number;
  http5xx: number;
  frames: number;
  errorFrames: number;
}

export class NodeSamples {
  readonly nodeId = randomUUID();
  private readonly startedAt = Date.now();
  private readonly samples: NodeSample[] = [];
  private last: Totals | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      metrics: Metrics;
      gateway: Pick<Gateway, 'connectionCount' | 'localUserIds'>;
      kv: Kv;
      log: Logger;
      intervalMs: number;
    },
  ) {}

  async start(): Promise<void> {
    this.last = await this.totals();
    this.timer = setInterval(() => {
      this.sample().catch((err) => this.deps.log.warn({ err }, 'console: sampling the node failed'));
    }, this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.deps.kv.del(nodeKey(this.nodeId)).catch(() => undefined);
  }

  /** Takes one sample now and publishes the node's snapshot (the timer calls it; tests may too). */
  async sample(): Promise<void> {
    const now = await this.totals();
    const before = this.last ?? now;
    this.last = now;
    const seconds = Math.max((now.at - before.at) / 1000, 0.001);
    const rate = (a: number, b: number) => Math.max(0, (a - b) / seconds);
    this.samples.push({
      at: now.at,
      httpPerSecond: rate(now.http, before.http),
      http4xxPerSecond: rate(now.http4xx, before.http4xx),
      http5xxPerSecond: rate(now.http5xx, before.http5xx),
      framesPerSecond: rate(now.frames, before.frames),
      errorFramesPerSecond: rate(now.errorFrames, before.errorFrames),
      sockets: this.deps.gateway.connectionCount,
      users: this.deps.gateway.localUserIds().length,
    });
    if (this.samples.length > SAMPLES_KEPT) this.samples.splice(0, this.samples.length - SAMPLES_KEPT);
    const snapshot: NodeSnapshot = { nodeId: this.nodeId, startedAt: this.startedAt, samples: this.samples };
    await this.deps.kv.set(nodeKey(this.nodeId), JSON.stringify(snapshot), {
      ttlMs: this.deps.intervalMs * 3,
    });
    await this.deps.kv.sadd(NODES_KEY, this.nodeId);
  }

  /** Every node with a current snapshot; nodes whose snapshot lapsed leave the registry. */
  async cluster(): Promise<NodeSnapshot[]> {
    const ids = (await this.deps.kv.smembers(NODES_KEY)).sort();
    if (ids.length === 0) return [];
    const stored = await this.deps.kv.mget(ids.map(nodeKey));
    const gone = ids.filter((_, i) => stored[i] === null);
    if (gone.length > 0) await this.deps.kv.srem(NODES_KEY, ...gone);
    return stored
      .filter((value): value is string => value !== null)
      .map((value) => JSON.parse(value) as NodeSnapshot);
  }

  private async totals(): Promise<Totals> {
    const totals: Totals = { at: Date.now(), http: 0, http4xx: 0, http5xx: 0, frames: 0, errorFrames: 0 };
    for (const value of this.deps.metrics.httpRequestDuration.get().values) {
      if (!value.metricName.endsWith('_count')) continue;
      totals.http += value.value;
      const status = String(value.labels.status ?? '');
      if (status.startsWith('4')) totals.http4xx += value.value;
      if (status.startsWith('5')) totals.http5xx += value.value;
    }
    for (const value of (await this.deps.metrics.wsFramesReceived.get()).values) totals.frames += value.value;
    for (const value of (await this.deps.metrics.wsErrorFrames.get()).values)
      totals.errorFrames += value.value;
    return totals;
  }
}
