import type { Metric, Registry } from 'prom-client';
import type { Sample } from './hot-histogram.js';

/**
 * A Prometheus counter for per-frame and per-call paths. prom-client's Counter validates and
 * hashes the label set on every inc(), even through a labelled child (which only binds the
 * labels): a few percent of a cheap frame. Here each label set gets its child once and counting
 * is one addition. Registries scrape it like a prom-client metric (HotHistogram says how).
 */
export class HotCounter<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly labelNames: readonly L[];
  private readonly children = new Map<string, CounterChild>();

  constructor(options: { name: string; help: string; labelNames: readonly L[]; registers: Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child for one label set: keep it and count through it. */
  child(labels: Readonly<Record<L, string>>): CounterChild {
    const key = JSON.stringify(this.labelNames.map((name) => labels[name]));
    let child = this.children.get(key);
    if (!child) {
      child = new CounterChild({ ...labels });
      this.children.set(key, child);
    }
    return child;
  }

  /** Counts once for a label set met seldom (a refusal, an unknown type): looks its child up. */
  inc(labels: Readonly<Record<L, string>>): void {
    this.child(labels).inc();
  }

  /** What the registry formats for a scrape. */
  getForPromString() {
    const values: Sample[] = [];
    for (const { labels, value } of this.children.values()) {
      values.push({ metricName: this.name, labels: {}, sharedLabels: labels, value });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The registry's JSON form: each sample's labels in one object. */
  get() {
    const metric = this.getForPromString();
    return {
      ...metric,
      values: metric.values.map(({ sharedLabels, value }) => ({ labels: sharedLabels, value })),
    };
  }

  reset(): void {
    for (const child of this.children.values()) child.value = 0;
  }
}

export class CounterChild {
  value = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc(): void {
    this.value++;
  }
}
