import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dueBacklog } from '../../src/modules/webhooks/deliveries.repository.js';
import { readBacklog } from '../../src/platform/outbox-store.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { buildTestApp, type TestApp, useTestApp } from '../helpers/app.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';
import { sampleOf, scrape } from '../helpers/metrics-text.js';
import { hasRedisServer, RedisServer } from '../helpers/redis-server.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The metrics the operations kit alerts on (deploy/prometheus/alerts.yml, docs/operations.md):
 * dependencies, the database pool, publish failures, webhook attempts and the queues' backlogs.
 */
describe('operator metrics of a running service', () => {
  const app = useTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, WEBHOOK_MAX_ATTEMPTS: 1 });
  const { expectStatus } = callsAs(app);

  it('reports that the database and the KV store answer, and the pool with its size', async () => {
    const text = await scrape(app());
    expect(sampleOf(text, 'atrium_dependency_up{dependency="database"}')).toBe(1);
    expect(sampleOf(text, 'atrium_dependency_up{dependency="kv"}')).toBe(1);
    expect(sampleOf(text, 'atrium_db_pool_max_connections')).toBe(app().db.poolSize);
    // Background jobs starting up may be waiting for a connection of the pool right now.
    expect(sampleOf(text, 'atrium_db_pool_waiting')).toBeGreaterThanOrEqual(0);
    const inUse = sampleOf(text, 'atrium_db_pool_connections{state="in_use"}');
    expect(inUse).toBeGreaterThanOrEqual(0);
    expect(inUse).toBeLessThanOrEqual(app().db.poolSize);
  });

  it('exports every webhook outcome and both queues from the first scrape, before anything happened', async () => {
    const text = await scrape(app());
    for (const outcome of ['delivered', 'retrying', 'failed']) {
      expect(sampleOf(text, `atrium_webhook_attempts_total{outcome="${outcome}"}`)).toBe(0);
    }
    for (const queue of ['atrium_outbox', 'atrium_webhook']) {
      expect(sampleOf(text, `${queue}_due_deliveries`)).toBeGreaterThanOrEqual(0);
      expect(sampleOf(text, `${queue}_oldest_due_seconds`)).toBeGreaterThanOrEqual(0);
    }
  });

  it('counts webhook attempts by outcome: delivered, and failed once the last attempt failed', async () => {
    const receiver = await webhookReceiver((path) => (path === '/refuses' ? 500 : 204));
    try {
      const admin = await registerWithRole(app(), 'admin');
      for (const path of ['/accepts', '/refuses']) {
        await expectStatus(201, 'POST', '/api/admin/webhooks', admin, {
          url: receiver.url(path),
          events: ['user.registered'],
        });
      }
      const before = await scrape(app());
      const count = (text: string, outcome: string) =>
        sampleOf(text, `atrium_webhook_attempts_total{outcome="${outcome}"}`) ?? 0;
      await registerUser(app());
      await vi.waitFor(
        async () => {
          const text = await scrape(app());
          expect(count(text, 'delivered') - count(before, 'delivered')).toBe(1);
          expect(count(text, 'failed') - count(before, 'failed')).toBe(1);
        },
        { timeout: 30_000, interval: 100 },
      );
    } finally {
      await receiver.close();
    }
  });
});

describe('the queues as the backlog gauges read them', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(() => testDb.drop());

  it('counts the outbox deliveries due and not claimed, and how long the oldest has waited', async () => {
    expect(await readBacklog(testDb.db.data)).toEqual({ due: 0, oldestDueSeconds: 0 });
    const event = randomUUID();
    await queryRows(
      testDb.db,
      `insert into outbox_events (id, type, data, at) values (?, 'test.event', '{}', now())`,
      [event],
    );
    await queryRows(
      testDb.db,
      `insert into outbox_deliveries (event_id, consumer, attempts, next_attempt_at) values
         (?, 'due-long-ago', 0, now() - interval '90 seconds'),
         (?, 'due-now', 0, now()),
         (?, 'leased', 1, now() + interval '30 seconds')`,
      [event, event, event],
    );
    const backlog = await readBacklog(testDb.db.data);
    expect(backlog.due).toBe(2);
    expect(backlog.oldestDueSeconds).toBeGreaterThanOrEqual(90);
    expect(backlog.oldestDueSeconds).toBeLessThan(3600);
  });

  it('counts the webhook deliveries due to enabled endpoints only, and the oldest one’s wait', async () => {
    const endpoint = async (enabled: boolean) => {
      const id = randomUUID();
      await queryRows(
        testDb.db,
        `insert into webhook_endpoints (id, url, events, enabled, description, secret, enabled_since, created_at, updated_at)
         values (?, 'https://hooks.example/x', '{*}', ?, '', 'whsec_x', now(), now(), now())`,
        [id, enabled],
      );
      return id;
    };
    const delivery = (endpointId: string, status: string, dueSql: string) =>
      queryRows(
        testDb.db,
        `insert into webhook_deliveries (id, endpoint_id, event_id, event_type, body, status, attempts, budget_start,
           next_attempt_at, attempting, created_at)
         values (?, ?, ?, 'user.registered', '{}', ?, 0, 0, ${dueSql}, false, now())`,
        [randomUUID(), endpointId, randomUUID(), status],
      );
    const enabled = await endpoint(true);
    const disabled = await endpoint(false);
    await delivery(enabled, 'pending', "now() - interval '120 seconds'");
    await delivery(enabled, 'pending', "now() + interval '1 hour'");
    await delivery(enabled, 'failed', "now() - interval '1 hour'");
    await delivery(disabled, 'pending', "now() - interval '1 day'");
    const backlog = await dueBacklog(testDb.db.data);
    expect(backlog.due).toBe(1);
    expect(backlog.oldestDueSeconds).toBeGreaterThanOrEqual(120);
    expect(backlog.oldestDueSeconds).toBeLessThan(3600);
  });
});

describe.skipIf(!hasRedisServer())('operator metrics while Redis is down', () => {
  let redis: RedisServer;
  let app: TestApp;
  beforeAll(async () => {
    redis = await RedisServer.start();
    app = await buildTestApp({ REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT_MS: 500 });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('reports the KV store down and counts each event that could not be published, by type', async () => {
    expect(sampleOf(await scrape(app), 'atrium_dependency_up{dependency="kv"}')).toBe(1);
    await redis.stop();
    await expect(app.bus.publish('world:metrics-test', { t: 'metrics.test', d: 1 })).rejects.toThrow();
    const text = await scrape(app);
    expect(sampleOf(text, 'atrium_dependency_up{dependency="kv"}')).toBe(0);
    expect(sampleOf(text, 'atrium_dependency_up{dependency="database"}')).toBe(1);
    expect(sampleOf(text, 'atrium_event_publish_failures_total{type="metrics.test"}')).toBe(1);

    await redis.start();
    await vi.waitFor(
      async () => expect(sampleOf(await scrape(app), 'atrium_dependency_up{dependency="kv"}')).toBe(1),
      { timeout: 30_000, interval: 100 },
    );
  });
});
