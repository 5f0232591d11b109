import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotHistogram } from '../../src/platform/hot-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const metric = { name: 'test_duration_seconds', help: 'A test histogram.', buckets: BUCKETS } as const;

function pair() {
  const hotRegistry = new Registry();
  const promRegistry = new Registry();
  const hot = new HotHistogram({ ...metric, labelNames: ['route', 'status'], registers: [hotRegistry] });
  const prom = new Histogram({ ...metric, labelNames: ['route', 'status'], registers: [promRegistry] });
  return { hot, prom, hotRegistry, promRegistry };
}

describe('HotHistogram', () => {
  it("scrapes, as text and as JSON, exactly as prom-client's Histogram given the same observations", async () => {
    const { hot, prom, hotRegistry, promRegistry } = pair();
    const observations: [Record<'route' | 'status', string>, number][] = [
      [{ route: '/a', status: '200' }, 0.0005],
      [{ route: '/a', status: '200' }, 0.001],
      [{ route: '/a', status: '200' }, 0.05],
      [{ route: '/a', status: '500' }, 3],
      [{ route: '/b "quoted"\\', status: '200' }, 0.2],
    ];
    for (const [labels, value] of observations) {
      hot.child(labels).observe(value);
      prom.observe(labels, value);
    }
    const scraped = await hotRegistry.metrics();
    expect(scraped).toBe(await promRegistry.metrics());
    expect(scraped).toContain('test_duration_seconds_bucket{le="0.001",route="/a",status="200"} 2');
    // prom-client adds an empty exemplar slot to each sample; exemplars are not used here.
    const promJson = (await promRegistry.getMetricsAsJSON()).map((m) => ({
      ...m,
      values: m.values.map((sample) => {
        const { exemplar: _, ...rest } = sample as typeof sample & { exemplar?: unknown };
        return rest;
      }),
    }));
    expect(await hotRegistry.getMetricsAsJSON()).toEqual(promJson);
  });

  it('counts a value equal to a bound in that bucket and one above every bound only in +Inf', async () => {
    const { hot, hotRegistry } = pair();
    const child = hot.child({ route: '/a', status: '200' });
    child.observe(0.01);
    child.observe(5);
    const text = await hotRegistry.metrics();
    expect(text).toContain('test_duration_seconds_bucket{le="0.001",route="/a",status="200"} 0');
    expect(text).toContain('test_duration_seconds_bucket{le="0.01",route="/a",status="200"} 1');
    expect(text).toContain('test_duration_seconds_bucket{le="1",route="/a",status="200"} 1');
    expect(text).toContain('test_duration_seconds_bucket{le="+Inf",route="/a",status="200"} 2');
    expect(text).toContain('test_duration_seconds_sum{route="/a",status="200"} 5.01');
  });

  it('hands out one child per label set, so observations through either add up', async () => {
    const { hot, hotRegistry } = pair();
    hot.child({ route: '/a', status: '200' }).observe(0.5);
    hot.child({ status: '200', route: '/a' }).observe(0.5);
    expect(await hotRegistry.metrics()).toContain('test_duration_seconds_count{route="/a",status="200"} 2');
  });

  it('ignores NaN instead of poisoning the sum', async () => {
    const { hot, hotRegistry } = pair();
    const child = hot.child({ route: '/a', status: '200' });
    child.observe(Number.NaN);
    child.observe(0.25);
    const text = await hotRegistry.metrics();
    expect(text).toContain('test_duration_seconds_sum{route="/a",status="200"} 0.25');
    expect(text).toContain('test_duration_seconds_count{route="/a",status="200"} 1');
  });

  it('zeroes every child when the registry resets its metrics', async () => {
    const { hot, hotRegistry } = pair();
    hot.child({ route: '/a', status: '200' }).observe(0.5);
    hotRegistry.resetMetrics();
    const text = await hotRegistry.metrics();
    expect(text).toContain('test_duration_seconds_count{route="/a",status="200"} 0');
    expect(text).toContain('test_duration_seconds_sum{route="/a",status="200"} 0');
  });

  it('refuses buckets that do not increase', () => {
    expect(
      () => new HotHistogram({ ...metric, buckets: [0.1, 0.1], labelNames: ['route'], registers: [] }),
    ).toThrow(/buckets must increase/);
  });
});
