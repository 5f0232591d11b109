import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mergeParts } from '../protocol/parts.js';
import { ConfigError, configParts, configSchema, loadConfig } from '../src/config.js';
import { configInForce } from '../src/platform/config-in-force.js';
import { runCli } from './helpers/service-process.js';

describe('configuration', () => {
  it('uses the contract defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      HTTP_PORT: 8080,
      WS_PORT: 8081,
      DATA_DIR: './data',
      PRESENCE_TTL_SECONDS: 60,
      DM_RATE_LIMIT_COUNT: 10,
      DM_RATE_LIMIT_WINDOW_SECONDS: 10,
      DM_FILTER_MODE: 'mask',
      GAMESERVER_READY_TIMEOUT_MS: 30_000,
      MIGRATE_ON_START: true,
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.REDIS_URL).toBeUndefined();
  });

  it('reads values from the environment and coerces numbers and booleans', () => {
    const config = loadConfig({
      HTTP_PORT: '0',
      WS_PORT: '9001',
      MIGRATE_ON_START: 'false',
      DATABASE_URL: 'postgres://u@db:5432/atrium',
      REDIS_URL: 'redis://cache:6379',
      PRESENCE_TTL_SECONDS: '15',
    });
    expect(config.HTTP_PORT).toBe(0);
    expect(config.WS_PORT).toBe(9001);
    expect(config.MIGRATE_ON_START).toBe(false);
    expect(config.DATABASE_URL).toBe('postgres://u@db:5432/atrium');
    expect(config.REDIS_URL).toBe('redis://cache:6379');
    expect(config.PRESENCE_TTL_SECONDS).toBe(15);
  });

  it('treats an empty variable as unset', () => {
    const config = loadConfig({ HTTP_PORT: '', DATABASE_URL: '  ' });
    expect(config.HTTP_PORT).toBe(8080);
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it.each([
    ['HTTP_PORT', 'abc', 'HTTP_PORT must be an integer from 0 to 65535 (got "abc")'],
    ['WS_PORT', '70000', 'WS_PORT must be an integer from 0 to 65535 (got "70000")'],
    ['PRESENCE_TTL_SECONDS', '0', 'PRESENCE_TTL_SECONDS must be an integer from 1 to 86400 (got "0")'],
    ['MIGRATE_ON_START', 'maybe', 'MIGRATE_ON_START must be one of true, false, 1, 0, yes, no (got "maybe")'],
    [
      'DATABASE_URL',
      'mysql://x:pw@y/z',
      'DATABASE_URL must be a URL starting with postgres:// or postgresql:// (value hidden)',
    ],
    ['REDIS_URL', 'not a url', 'REDIS_URL must be a URL starting with redis:// or rediss:// (value hidden)'],
    [
      'JWT_SIGNING_KEY_PEM',
      'secret-ish',
      'JWT_SIGNING_KEY_PEM must be PEM text containing -----BEGIN PRIVATE KEY----- (value hidden)',
    ],
    ['WS_IDLE_TIMEOUT_SECONDS', '0', 'WS_IDLE_TIMEOUT_SECONDS must be an integer from 8 to 960 (got "0")'],
    [
      'LOG_LEVEL',
      'loud',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ],
    ['DM_FILTER_MODE', 'censor', 'DM_FILTER_MODE must be one of mask, reject (got "censor")'],
    [
      'GAMESERVER_READY_TIMEOUT_MS',
      '1.5',
      'GAMESERVER_READY_TIMEOUT_MS must be an integer from 1 to 3600000 (got "1.5")',
    ],
    ['GAMESERVER_SPAWNER', 'docker', 'GAMESERVER_SPAWNER must be one of local, agones (got "docker")'],
    [
      'GAMESERVER_PUBLIC_HOST',
      'a b',
      'GAMESERVER_PUBLIC_HOST must be a host name, an IPv4 address or a [bracketed] IPv6 address (got "a b")',
    ],
    [
      'GAMESERVER_COMMAND',
      '["node", 1]',
      'GAMESERVER_COMMAND must be a JSON array of non-empty strings when it starts with [ (got "[\\"node\\", 1]")',
    ],
    [
      'GAMESERVER_COMMAND',
      '[node server.js',
      'GAMESERVER_COMMAND must be a JSON array of non-empty strings when it starts with [ (got "[node server.js")',
    ],
    [
      'GAMESERVER_API_URL',
      'ftp://x',
      'GAMESERVER_API_URL must be a URL starting with http:// or https:// (got "ftp://x")',
    ],
  ])('rejects a bad %s with one line naming the variable and what is allowed', (name, value, expected) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(`Invalid configuration: ${expected}`);
  });

  it('names every bad variable when several are wrong', () => {
    let message = '';
    try {
      loadConfig({ HTTP_PORT: '-1', WS_PORT: 'x' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('HTTP_PORT must be');
    expect(message).toContain('WS_PORT must be');
    expect(message.split('\n')).toHaveLength(1);
  });

  it('trusts no proxy by default or when TRUST_PROXY is false, no or 0', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    for (const value of ['false', 'no', '0', 'FALSE'])
      expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toBe(false);
  });

  it('reads a TRUST_PROXY number as the count of proxies in front of the service', () => {
    expect(loadConfig({ TRUST_PROXY: '1' }).TRUST_PROXY).toEqual({ hops: 1 });
    expect(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toEqual({ hops: 2 });
  });

  it('reads TRUST_PROXY as a list of trusted proxy addresses, CIDRs and named ranges', () => {
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7 ,::1,fd00::/8,loopback' }).TRUST_PROXY).toEqual(
      {
        addresses: ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', 'loopback'],
      },
    );
  });

  it('refuses TRUST_PROXY=true at startup, saying why and what to set instead', () => {
    for (const value of ['true', 'yes']) {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(ConfigError);
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(
        'Invalid configuration: TRUST_PROXY no longer accepts true, which let clients forge their address in ' +
          'X-Forwarded-For: set false, the number of proxies in front of the service (1 to 10), or a ' +
          'comma-separated list of proxy addresses or CIDRs (loopback, linklocal and uniquelocal name those ranges) ' +
          `(got "${value}")`,
      );
    }
  });

  it.each(['11', '00', '1.5', 'proxy.internal', '10.0.0.0/33', '10.0.0.0/0', '10.0.0.1,,10.0.0.2', '1.2.3'])(
    'refuses TRUST_PROXY=%s, naming the forms it allows',
    (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(
        'Invalid configuration: TRUST_PROXY must be false, the number of proxies in front of the service (1 to 10), ' +
          'or a comma-separated list of proxy addresses or CIDRs (loopback, linklocal and uniquelocal name those ranges) ' +
          `(got "${value}")`,
      );
    },
  );

  describe('WORKERS', () => {
    const production = { DATABASE_URL: 'postgres://u@db:5432/atrium', REDIS_URL: 'redis://cache:6379' };

    it('runs one process by default in embedded mode, and with only one of DATABASE_URL and REDIS_URL', () => {
      expect(loadConfig({}).WORKERS).toBe(1);
      expect(loadConfig({ DATABASE_URL: production.DATABASE_URL }).WORKERS).toBe(1);
      expect(loadConfig({ REDIS_URL: production.REDIS_URL }).WORKERS).toBe(1);
    });

    it.each([
      ['REDIS_URL', production],
      [
        'REDIS_SENTINELS',
        { DATABASE_URL: production.DATABASE_URL, REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' },
      ],
      ['REDIS_CLUSTER_NODES', { DATABASE_URL: production.DATABASE_URL, REDIS_CLUSTER_NODES: 'n:7000' }],
    ])('runs a worker per core by default in production mode (DATABASE_URL and %s)', (_redis, env) => {
      expect(loadConfig(env).WORKERS).toBe('auto');
      expect(loadConfig({ ...env, WORKERS: '' }).WORKERS).toBe('auto');
    });

    it("shows the production mode's default in the admins' view of the configuration as auto", () => {
      expect(configInForce(loadConfig(production), configParts)).toContainEqual({
        name: 'WORKERS',
        part: 'platform',
        value: 'auto',
        redacted: false,
      });
    });

    it('takes a count, or auto for one per core, in production mode; WORKERS=1 keeps one process', () => {
      expect(loadConfig({ ...production, WORKERS: '1' }).WORKERS).toBe(1);
      expect(loadConfig({ ...production, WORKERS: '4' }).WORKERS).toBe(4);
      expect(loadConfig({ ...production, WORKERS: 'auto' }).WORKERS).toBe('auto');
      expect(loadConfig({ ...production, WORKERS: '256' }).WORKERS).toBe(256);
    });

    it.each(['0', '-1', 'abc', '1.5', '257', 'AUTO'])(
      'refuses WORKERS=%s, naming what it allows',
      (value) => {
        expect(() => loadConfig({ ...production, WORKERS: value })).toThrow(
          `Invalid configuration: WORKERS must be auto or an integer from 1 to 256 (got "${value}")`,
        );
      },
    );

    it.each([
      ['2', {}],
      ['auto', {}],
      ['2', { DATABASE_URL: production.DATABASE_URL }],
      ['2', { REDIS_URL: production.REDIS_URL }],
    ])('refuses WORKERS=%s without both DATABASE_URL and a shared Redis, saying why', (value, env) => {
      expect(() => loadConfig({ ...env, WORKERS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ ...env, WORKERS: value })).toThrow(
        `Invalid configuration: WORKERS=${value} needs DATABASE_URL and a shared Redis (REDIS_URL, ` +
          'REDIS_SENTINELS or REDIS_CLUSTER_NODES): worker processes share only a PostgreSQL and a Redis, ' +
          'while the embedded database and the in-process KV belong to one process (set both, or WORKERS=1)',
      );
    });

    it('keeps WORKERS=1 in embedded mode', () => {
      expect(loadConfig({ WORKERS: '1' }).WORKERS).toBe(1);
    });

    it('stops serve in embedded mode with WORKERS=2: one stderr line, exit code 78', () => {
      const result = runCli(['serve'], { WORKERS: '2' }, 20_000);
      expect(result.status).toBe(78);
      expect(result.stderr.trim()).toMatch(
        /^Invalid configuration: WORKERS=2 needs DATABASE_URL and a shared Redis /,
      );
    });
  });

  it('stops the CLI at startup with one stderr line and exit code 78', () => {
    const result = runCli(['serve'], { HTTP_PORT: 'eighty' }, 20_000);
    expect(result.status).toBe(78);
    expect(result.stderr.trim()).toBe(
      'Invalid configuration: HTTP_PORT must be an integer from 0 to 65535 (got "eighty")',
    );
  });
});

describe('configuration parts', () => {
  const assembled = Object.keys(configSchema.shape);

  it('assembles every setting each part declares, none declared by two parts', () => {
    const declared = Object.values(configParts).flatMap((part) => Object.keys(part));
    expect(new Set(declared).size).toBe(declared.length);
    expect([...assembled].sort()).toEqual([...declared].sort());
  });

  it('refuses two parts that declare one name, naming both', () => {
    expect(() => mergeParts({ platform: { HOST: 1 }, worlds: { HOST: 2 } })).toThrow(
      'HOST is declared by both platform and worlds',
    );
  });

  it("lists exactly the assembled settings in the README's configuration table", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Command line'));
    const rows = [...section.matchAll(/^\| `([A-Z0-9_]+\*?)`/gm)].map((match) => match[1] as string);
    // `GAMESERVER_AGONES_*` stands for the agones spawner's settings, documented on their own page.
    const covers = (row: string, name: string) =>
      row.endsWith('*') ? name.startsWith(row.slice(0, -1)) : name === row;
    expect(assembled.filter((name) => !rows.some((row) => covers(row, name)))).toEqual([]);
    expect(rows.filter((row) => !assembled.some((name) => covers(row, name)))).toEqual([]);
    expect(new Set(rows).size).toBe(rows.length);
  });
});
