import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { useTestApp } from '../helpers/app.js';
import { metricNamesIn, selectorOfLabelValues } from '../helpers/promql.js';
import { promtool, requirePromtool } from '../helpers/promtool.js';

/**
 * deploy/grafana's dashboard and deploy/prometheus's rules and scrape config name only metrics the
 * service exports, and promtool accepts them (docs/operations.md, "Monitoring kit").
 */
const root = new URL('../../', import.meta.url);
const read = (path: string) => readFile(new URL(path, root), 'utf8');
const DASHBOARD = 'deploy/grafana/dashboards/atrium.json';
const RULES = 'deploy/prometheus/alerts.yml';
const SCRAPE_CONFIG = 'deploy/prometheus/prometheus.yml';

/** Series Prometheus makes itself for each scrape target, which the rules may name too. */
const PROMETHEUS_OWN = ['up'];

interface RuleFile {
  groups: {
    name: string;
    rules: { alert?: string; record?: string; expr: string; annotations?: { runbook?: string } }[];
  }[];
}

/** Every `expr` of the dashboard's panels (rows' nested panels included) and its variables' metrics. */
function dashboardQueries(dashboard: unknown): string[] {
  const queries: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'expr' && typeof value === 'string') queries.push(value);
        else if (key === 'query' && typeof value === 'string') {
          const selector = selectorOfLabelValues(value);
          if (selector) queries.push(selector);
        } else walk(value);
      }
    }
  };
  walk(dashboard);
  return queries;
}

/** A dashboard query as Prometheus would get it from Grafana, its variables given values. */
const withVariables = (expr: string) =>
  expr.replaceAll('$__rate_interval', '5m').replaceAll('$instance', '.*');

describe('metric names in the monitoring kit', () => {
  const app = useTestApp();
  /** What the service's registry holds, a histogram standing for its three series. */
  const exported = () => {
    const names = new Set(PROMETHEUS_OWN);
    for (const metric of app().metrics.registries.flatMap((registry) => registry.getMetricsAsArray())) {
      const { name, type } = metric as unknown as { name: string; type: string };
      names.add(name);
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    }
    return names;
  };

  it('finds the metric names in a query, not its functions, labels, keywords or variables', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, route) (rate(atrium_http_request_duration_seconds_bucket{instance=~"$instance",status=~"5.."}[$__rate_interval]))) / clamp_min(x_total offset 5m, 1e-9) > bool 0 or vector(0)',
      ).sort(),
    ).toEqual(['atrium_http_request_duration_seconds_bucket', 'x_total']);
  });

  it("names in the dashboard's queries only metrics the service exports", async () => {
    const queries = dashboardQueries(JSON.parse(await read(DASHBOARD)));
    expect(queries.length).toBeGreaterThan(20);
    const names = queries.flatMap(metricNamesIn);
    expect(names.filter((name) => !exported().has(name))).toEqual([]);
  });

  it("names in the alert rules' expressions only metrics the service exports", async () => {
    const rules = (parse(await read(RULES)) as RuleFile).groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.alert)).toEqual(
      expect.arrayContaining([
        'AtriumHighErrorRate',
        'AtriumHighLatencyP99',
        'AtriumDatabasePoolSaturated',
        'AtriumRedisLost',
        'AtriumNodeMissing',
        'AtriumWebhookBacklog',
      ]),
    );
    const names = rules.flatMap((rule) => metricNamesIn(rule.expr));
    expect(names.filter((name) => !exported().has(name))).toEqual([]);
  });

  it('points every alert at an entry of the runbook in docs/operations.md', async () => {
    const entries = [...(await read('docs/operations.md')).matchAll(/^#### `(\w+)`$/gm)].map(
      (match) => `docs/operations.md#${(match[1] as string).toLowerCase()}`,
    );
    const rules = (parse(await read(RULES)) as RuleFile).groups.flatMap((group) => group.rules);
    for (const rule of rules.filter((candidate) => candidate.alert)) {
      expect(entries, rule.alert).toContain(rule.annotations?.runbook);
    }
  });
});

describe.runIf(requirePromtool('test/deploy/monitoring-kit.test.ts'))('promtool', () => {
  it('accepts the alert rules', () => {
    expect(promtool('check', 'rules', new URL(RULES, root).pathname)).toContain('SUCCESS');
  });

  it('accepts the scrape config with its rule files', async () => {
    // The config names the rules where the Compose stack mounts them; here, where they are.
    const dir = await mkdtemp(join(tmpdir(), 'atrium-prometheus-'));
    try {
      const config = (await read(SCRAPE_CONFIG)).replace(
        '/etc/prometheus/alerts.yml',
        new URL(RULES, root).pathname,
      );
      await writeFile(join(dir, 'prometheus.yml'), config);
      expect(promtool('check', 'config', join(dir, 'prometheus.yml'))).toContain('SUCCESS');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("parses every one of the dashboard's queries", async () => {
    // promtool parses expressions only in rule files: each query becomes a recording rule.
    const queries = dashboardQueries(JSON.parse(await read(DASHBOARD)));
    const rules = queries.map((expr, n) => ({ record: `dashboard:query_${n}`, expr: withVariables(expr) }));
    const dir = await mkdtemp(join(tmpdir(), 'atrium-dashboard-'));
    try {
      await writeFile(join(dir, 'queries.yml'), JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
      expect(promtool('check', 'rules', join(dir, 'queries.yml'))).toContain(`${rules.length} rules found`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
