import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';

/**
 * docker-compose.yml, read as Compose would (no Docker here): its Atrium services' settings are the
 * README's and valid, what it mounts exists, what it depends on is there, and the default stack
 * (no profile) is the one the README documents.
 */
const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

interface Service {
  build?: unknown;
  image?: string;
  profiles?: string[];
  environment?: Record<string, string | number | boolean>;
  depends_on?: string[] | Record<string, { condition?: string }>;
  volumes?: string[];
  healthcheck?: unknown;
  ports?: string[];
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = Object.entries(compose.services);
/** Atrium is the services built from the Dockerfile. */
const atriumServices = services.filter(([, service]) => service.build !== undefined);

/** `${NAME:-default}` as Compose fills it in with NAME unset. */
const interpolated = (value: string | number | boolean) =>
  String(value).replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1');

const dependencies = (service: Service): [string, string | undefined][] =>
  Array.isArray(service.depends_on)
    ? service.depends_on.map((name) => [name, undefined])
    : Object.entries(service.depends_on ?? {}).map(([name, { condition }]) => [name, condition]);

/** A mount's host side, when it is a path in the repository (`./deploy/...`), and its container side. */
const bindMounts = (service: Service) =>
  (service.volumes ?? [])
    .filter((volume) => volume.startsWith('./'))
    .map((volume) => {
      const [source = '', target = ''] = volume.split(':');
      return { source, target };
    });

const readmeSettings = (() => {
  const readme = read('README.md');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Command line'));
  return new Set([...section.matchAll(/^\| `([A-Z0-9_]+)`/gm)].map((match) => match[1] as string));
})();

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, Redis and one Atrium on 8080 and 8081 without a profile, as the README says', () => {
    const unprofiled = services.filter(([, service]) => !service.profiles).map(([name]) => name);
    expect(unprofiled.sort()).toEqual(['atrium', 'postgres', 'redis']);
    expect(compose.services.atrium?.ports).toEqual(['8080:8080', '8081:8081']);
  });

  it.each(atriumServices.map(([name, service]) => [name, service] as const))(
    "sets in %s only settings of the README's configuration table, with values the service accepts",
    (_name, service) => {
      const environment = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [key, interpolated(value)]),
      );
      expect(Object.keys(environment).filter((key) => !readmeSettings.has(key))).toEqual([]);
      expect(() => loadConfig(environment)).not.toThrow();
    },
  );

  it('runs the production shape in its profile: two nodes with workers on Sentinel Redis, Prometheus and Grafana', () => {
    const production = services.filter(([, service]) => service.profiles?.includes('production'));
    const nodes = production.filter(([, service]) => service.environment?.REDIS_SENTINELS);
    expect(nodes.map(([name]) => name)).toEqual(['atrium-1', 'atrium-2']);
    for (const [, node] of nodes) {
      const config = loadConfig(
        Object.fromEntries(Object.entries(node.environment ?? {}).map(([k, v]) => [k, interpolated(v)])),
      );
      expect(config.WORKERS).toBeGreaterThan(1);
      for (const sentinel of (config.REDIS_SENTINELS ?? '').split(',')) {
        expect(compose.services[sentinel.split(':')[0] as string]?.profiles).toEqual(['production']);
      }
      // The Sentinels watch the primary under the name the nodes ask for.
      expect(read('deploy/redis/sentinel.conf')).toMatch(
        new RegExp(`^sentinel monitor ${config.REDIS_SENTINEL_NAME} (\\S+) 6379 2$`, 'm'),
      );
    }
    const monitored = /^sentinel monitor \S+ (\S+) /m.exec(read('deploy/redis/sentinel.conf'))?.[1];
    expect(compose.services[monitored as string]).toBeDefined();
    expect(production.map(([name]) => name)).toEqual(expect.arrayContaining(['prometheus', 'grafana']));
  });

  it('depends only on services it has, with a health check where it waits for health, and never from the default stack on a profile', () => {
    for (const [name, service] of services) {
      for (const [target, condition] of dependencies(service)) {
        const dependency = compose.services[target];
        expect(dependency, `${name} depends on ${target}`).toBeDefined();
        // Atrium's image declares its own HEALTHCHECK (Dockerfile).
        if (condition === 'service_healthy') {
          expect(dependency?.healthcheck ?? dependency?.build, `${target}'s health check`).toBeDefined();
        }
        if (!service.profiles) expect(dependency?.profiles, `${name} -> ${target}`).toBeUndefined();
      }
    }
  });

  it('mounts files and folders of the repository that exist, and named volumes it declares', () => {
    for (const [name, service] of services) {
      for (const { source } of bindMounts(service)) {
        expect(existsSync(fileURLToPath(new URL(source, root))), `${name} mounts ${source}`).toBe(true);
      }
      for (const volume of (service.volumes ?? []).filter((entry) => !entry.startsWith('./'))) {
        expect(Object.keys(compose.volumes), `${name}'s volume ${volume}`).toContain(volume.split(':')[0]);
      }
    }
  });

  it("gives Prometheus its rules where its config reads them, and scrapes the nodes' HTTP port", () => {
    const prometheus = compose.services.prometheus as Service;
    const config = parse(read('deploy/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const mounted = new Map(bindMounts(prometheus).map(({ source, target }) => [target, source]));
    expect(mounted.get('/etc/prometheus/prometheus.yml')).toBe('./deploy/prometheus/prometheus.yml');
    for (const rules of config.rule_files) expect(mounted.get(rules)).toBe('./deploy/prometheus/alerts.yml');
    const job = config.scrape_configs.find((candidate) => candidate.job_name === 'atrium');
    const targets = job?.static_configs.flatMap((entry) => entry.targets) ?? [];
    expect(targets.sort()).toEqual(['atrium-1:8080', 'atrium-2:8080']);
  });

  it('gives Grafana its data source and the dashboard where the provisioning reads it', () => {
    const grafana = compose.services.grafana as Service;
    const mounted = new Map(bindMounts(grafana).map(({ source, target }) => [target, source]));
    expect(mounted.get('/etc/grafana/provisioning')).toBe('./deploy/grafana/provisioning');
    const provider = parse(read('deploy/grafana/provisioning/dashboards/atrium.yml')) as {
      providers: { options: { path: string } }[];
    };
    const dashboards = mounted.get(provider.providers[0]?.options.path as string);
    expect(dashboards).toBe('./deploy/grafana/dashboards');
    expect(existsSync(fileURLToPath(new URL(`${dashboards}/atrium.json`, root)))).toBe(true);
    const home = String(grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH);
    expect(home).toBe(`${provider.providers[0]?.options.path}/atrium.json`);
    const datasource = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { url: string }[];
    };
    expect(datasource.datasources[0]?.url).toBe('http://prometheus:9090');
  });
});
