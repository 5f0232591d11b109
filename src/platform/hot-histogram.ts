import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string | number>>;

/**
 * One sample as prom-client's registry formats it: `metricName{labels,sharedLabels} value`. The
 * registry caches the formatted shared labels per object, so a child's labels go there.
 */
export interface Sample {
  metricName: string;
  labels: Labels;
  sharedLabels: Labels;
  value: number;
}

/**
 * A Prometheus histogram for per-request paths. prom-client's Histogram validates and hashes the
 * label set and looks the bucket up by a number-to-string property key on every observe(), even
 * through a labelled child: a measurable share of a cheap request. Here each label set gets its
 * child once, and observing is a scan of the bounds and three additions. Registries scrape it like
 * a prom-client metric: it has the `getForPromString()`, `get()` and `reset()` they call, with the
 * values in the shapes prom-client's own Histogram returns.
 */
export class HotHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly labelNames: readonly L[];
  private readonly bounds: readonly number[];
  private readonly children = new Map<string, HistogramChild>();

  constructor(options: {
    name: string;
    help: string;
    labelNames: readonly L[];
    /** Upper bounds in increasing order; +Inf is implied. */
    buckets: readonly number[];
    registers: Registry[];
  }) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    this.bounds = options.buckets;
    if (!this.bounds.every((bound, i) => i === 0 || bound > (this.bounds[i - 1] as number))) {
      throw new Error(`${this.name}: buckets must increase`);
    }
    // Registries use only name, getForPromString(), get() and reset(); their parameter type names
    // prom-client's own classes.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child for one label set: keep it and observe through it. */
  child(labels: Readonly<Record<L, string>>): HistogramChild {
    const key = JSON.stringify(this.labelNames.map((name) => labels[name]));
    let child = this.children.get(key);
    if (!child) {
      child = new HistogramChild(this.bounds, { ...labels });
      this.children.set(key, child);
    }
    return child;
  }

  /** What the registry formats for a scrape. */
  getForPromString() {
    const values: Sample[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { bounds, counts, count, sum, labels } of this.children.values()) {
      let cumulative = 0;
      bounds.forEach((bound, i) => {
        cumulative += counts[i] as number;
        values.push({
          metricName: bucketName,
          labels: { le: bound },
          sharedLabels: labels,
          value: cumulative,
        });
      });
      values.push(
        { metricName: bucketName, labels: { le: '+Inf' }, sharedLabels: labels, value: count },
        { metricName: `${this.name}_sum`, labels: {}, sharedLabels: labels, value: sum },
        { metricName: `${this.name}_count`, labels: {}, sharedLabels: labels, value: count },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The registry's JSON form: each sample's labels in one object. */
  get() {
    const metric = this.getForPromString();
    return {
      ...metric,
      values: metric.values.map(({ sharedLabels, labels, ...sample }) => ({
        ...sample,
        labels: { ...labels, ...sharedLabels },
      })),
    };
  }

  reset(): void {
    for (const child of this.children.values()) child.clear();
  }
}

export class HistogramChild {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    // NaN would land in the first bucket and poison the sum; durations never are, but be sure.
    if (Number.isNaN(value)) return;
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}
