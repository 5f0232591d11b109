import { AggregatorRegistry, Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter } from '../../src/platform/hot-counter.js';

const metric = { name: 'test_frames_total', help: 'A test counter.' } as const;

function pair() {
  const hotRegistry = new Registry();
  const promRegistry = new Registry();
  const hot = new HotCounter({ ...metric, labelNames: ['type', 'outcome'], registers: [hotRegistry] });
  const prom = new Counter({ ...metric, labelNames: ['type', 'outcome'], registers: [promRegistry] });
  return { hot, prom, hotRegistry, promRegistry };
}

const counts: [Record<'type' | 'outcome', string>, number][] = [
  [{ type: 'ping', outcome: 'ok' }, 3],
  [{ type: 'rpc', outcome: 'ok' }, 1],
  [{ type: 'rpc "quoted"\\', outcome: 'error' }, 2],
];

describe('HotCounter', () => {
  it("scrapes, as text and as JSON, exactly as prom-client's Counter given the same counts", async () => {
    const { hot, prom, hotRegistry, promRegistry } = pair();
    for (const [labels, times] of counts) {
      const child = hot.child(labels);
      for (let i = 0; i < times; i++) {
        child.inc();
        prom.inc(labels);
      }
    }
    const scraped = await hotRegistry.metrics();
    expect(scraped).toBe(await promRegistry.metrics());
    expect(scraped).toContain('test_frames_total{type="ping",outcome="ok"} 3');
    expect(await hotRegistry.getMetricsAsJSON()).toEqual(await promRegistry.getMetricsAsJSON());
  });

  it('hands out one child per label set, so counts through either add up, inc() included', async () => {
    const { hot, hotRegistry } = pair();
    hot.child({ type: 'ping', outcome: 'ok' }).inc();
    hot.child({ outcome: 'ok', type: 'ping' }).inc();
    hot.inc({ type: 'ping', outcome: 'ok' });
    expect(await hotRegistry.metrics()).toContain('test_frames_total{type="ping",outcome="ok"} 3');
  });

  it("adds up across workers' registries as prom-client's Counter does", async () => {
    const workers = [pair(), pair()];
    for (const [i, { hot, prom }] of workers.entries()) {
      for (const [labels, times] of counts) {
        for (let n = 0; n < times + i; n++) {
          hot.child(labels).inc();
          prom.inc(labels);
        }
      }
    }
    const hotTotal = AggregatorRegistry.aggregate(
      await Promise.all(workers.map(({ hotRegistry }) => hotRegistry.getMetricsAsJSON())),
    );
    const promTotal = AggregatorRegistry.aggregate(
      await Promise.all(workers.map(({ promRegistry }) => promRegistry.getMetricsAsJSON())),
    );
    expect(await hotTotal.metrics()).toBe(await promTotal.metrics());
    expect(await hotTotal.metrics()).toContain('test_frames_total{type="ping",outcome="ok"} 7');
  });

  it('zeroes every child when the registry resets its metrics', async () => {
    const { hot, hotRegistry } = pair();
    const child = hot.child({ type: 'ping', outcome: 'ok' });
    child.inc();
    hotRegistry.resetMetrics();
    expect(await hotRegistry.metrics()).toContain('test_frames_total{type="ping",outcome="ok"} 0');
    child.inc();
    expect(await hotRegistry.metrics()).toContain('test_frames_total{type="ping",outcome="ok"} 1');
  });
});
