import { describe, expect, it } from 'vitest';
import { ConfigError, configFrom, configParts, hasSharedRedis, loadConfig } from '../../src/config.js';
import { configInForce } from '../../src/platform/config-in-force.js';
import { redisTopology } from '../../src/platform/kv/index.js';

/** The ways to reach Redis (REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES) and their checks. */
describe('Redis settings', () => {
  it('reads REDIS_SENTINELS and REDIS_SENTINEL_NAME as a Sentinel topology, passwords included', () => {
    const config = loadConfig({
      REDIS_SENTINELS: 'sentinel-a:26379, sentinel-b:26380,[::1]:26381',
      REDIS_SENTINEL_NAME: 'atrium',
      REDIS_PASSWORD: 'data-secret',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(redisTopology(config)).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-a', port: 26379 },
        { host: 'sentinel-b', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'atrium',
      password: 'data-secret',
      sentinelPassword: 'sentinel-secret',
    });
  });

  it('reads REDIS_CLUSTER_NODES as a Cluster topology', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7001', REDIS_PASSWORD: 'pw' });
    expect(redisTopology(config)).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
      password: 'pw',
    });
  });

  it('counts each of the three as a shared Redis, and none as the in-process store', () => {
    expect(hasSharedRedis(configFrom({ REDIS_URL: 'redis://cache:6379' }))).toBe(true);
    expect(hasSharedRedis(configFrom({ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' }))).toBe(true);
    expect(hasSharedRedis(configFrom({ REDIS_CLUSTER_NODES: 'n:7000' }))).toBe(true);
    expect(hasSharedRedis(configFrom({}))).toBe(false);
    expect(redisTopology(configFrom({}))).toBeUndefined();
  });

  it.each([
    [
      { REDIS_URL: 'redis://cache:6379', REDIS_CLUSTER_NODES: 'n:7000' },
      'REDIS_URL and REDIS_CLUSTER_NODES are alternative ways to reach Redis: set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES',
    ],
    [
      { REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'n:7000' },
      'REDIS_SENTINELS and REDIS_CLUSTER_NODES are alternative ways to reach Redis: set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES',
    ],
    [
      { REDIS_SENTINELS: 's:26379' },
      'REDIS_SENTINELS needs REDIS_SENTINEL_NAME, the name the Sentinels monitor the primary under',
    ],
    [{ REDIS_SENTINEL_NAME: 'm' }, 'REDIS_SENTINEL_NAME is only used with REDIS_SENTINELS'],
    [
      { REDIS_CLUSTER_NODES: 'n:7000', REDIS_SENTINEL_PASSWORD: 'pw' },
      'REDIS_SENTINEL_PASSWORD is only used with REDIS_SENTINELS',
    ],
    [
      { REDIS_URL: 'redis://cache:6379', REDIS_PASSWORD: 'pw' },
      'REDIS_PASSWORD is only used with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL the password goes in the URL)',
    ],
  ])('refuses the contradictory combination %j at startup, saying what to change', (env, sentence) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(`Invalid configuration: ${sentence}`);
  });

  it.each(['cache', 'cache:0', 'cache:65536', 'a:6379,,b:6379', 'a:6379;b:6379', '[::1:6379'])(
    'refuses the node list %j, showing it',
    (value) => {
      for (const name of ['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES']) {
        expect(() => loadConfig({ [name]: value, REDIS_SENTINEL_NAME: 'm' })).toThrow(
          `${name} must be host:port pairs separated by commas (got ${JSON.stringify(value)})`,
        );
      }
    },
  );

  it('hides the passwords in error messages and from the admins’ view of the configuration', () => {
    expect(() => loadConfig({ REDIS_PASSWORD: 'hunter2' })).not.toThrow('hunter2');
    const config = configFrom({
      REDIS_SENTINELS: 's:26379',
      REDIS_SENTINEL_NAME: 'm',
      REDIS_PASSWORD: 'hunter2',
      REDIS_SENTINEL_PASSWORD: 'hunter3',
    });
    const shown = Object.fromEntries(
      configInForce(config, configParts).map((setting) => [setting.name, setting.value]),
    );
    expect(shown).toMatchObject({
      REDIS_SENTINELS: 's:26379',
      REDIS_SENTINEL_NAME: 'm',
      REDIS_PASSWORD: '[redacted]',
      REDIS_SENTINEL_PASSWORD: '[redacted]',
    });
    expect(JSON.stringify(configInForce(config, configParts))).not.toMatch(/hunter[23]/);
  });
});
