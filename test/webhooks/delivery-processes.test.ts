import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { WebhookDelivery, WebhookEndpoint } from '../../protocol/webhooks.js';
import { bearer } from '../helpers/accounts.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  adminOver,
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { type ReceivedHook, webhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Webhook delivery (docs/webhooks.md, "Delivery") as processes of `serve` run it: across a kill -9
 * between an event's commit and its delivery, to a receiver down for a while, and by two nodes
 * sharing one database (one in worker mode), each delivery reaching the receiver once.
 */

const { DATABASE_URL, REDIS_URL } = process.env;
/**
 * A delivery's wait, generous for a loaded two-core machine. It also covers an attempt that a
 * kill -9 caught in flight, due again only after its lease (WEBHOOK_TIMEOUT_SECONDS + 30 s).
 */
const DELIVERY_WAIT = { timeout: 60_000, interval: 200 };

type Receiver = Awaited<ReturnType<typeof webhookReceiver>>;

/** The service's settings common to every process here: loopback receivers, retries after 1 s, 2 s, ... */
const webhookEnv = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_BASE_SECONDS: '1',
  REGISTER_IP_MAX_ATTEMPTS: '1000',
};

/** The env of a process on the test's database (Postgres) or on its DATA_DIR's own (embedded). */
function databaseEnv(testDb: TestDatabase | undefined, prefix: string): Record<string, string> {
  return {
    DATABASE_URL: testDb?.url ?? '',
    REDIS_URL: REDIS_URL ?? '',
    REDIS_KEY_PREFIX: `test:${prefix}:${randomBytes(6).toString('hex')}:`,
    ...(testDb ? { MIGRATE_ON_START: 'false' } : {}),
  };
}

/** The admin API of one service process, as `admin` calls it. */
function adminApi(httpUrl: string, admin: TokenResponse) {
  const call = async (method: string, path: string, body?: object) => {
    const response = await fetch(`${httpUrl}${path}`, {
      method,
      headers: {
        ...bearer(admin.access_token),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  const deliveries = async (endpointId: string) =>
    (
      (await call('GET', `/api/admin/webhooks/${endpointId}/deliveries?limit=100`)) as {
        items: WebhookDelivery[];
      }
    ).items;
  return {
    createEndpoint: (url: string) =>
      call('POST', '/api/admin/webhooks', { url, events: ['user.registered'] }) as Promise<
        WebhookEndpoint & { secret: string }
      >,
    deliveries,
    /** The endpoint's deliveries once `check` holds of them (polled with a generous deadline). */
    untilDeliveries: (endpointId: string, check: (items: WebhookDelivery[]) => boolean) =>
      vi.waitFor(async () => {
        const items = await deliveries(endpointId);
        if (!check(items)) throw new Error(`deliveries so far: ${JSON.stringify(items)}`);
        return items;
      }, DELIVERY_WAIT),
  };
}

/** The user a user.registered request names. */
const registeredUserId = (hook: ReceivedHook) => JSON.parse(hook.body).data.user.id as string;

/** Ends every process still running, SIGKILL: these tests assert nothing about a drain. */
async function killAll(services: readonly ServiceProcess[]): Promise<void> {
  for (const { child, exited } of services) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  }
}

describe('webhook delivery by a service process', () => {
  let testDb: TestDatabase | undefined;
  let dataDir: string;
  let env: Record<string, string>;
  const services: ServiceProcess[] = [];
  let httpUrl: string;
  let admin: TokenResponse;
  /** What the receiver answers each path for now; 204 for any other. */
  const answers = new Map<string, number>();
  let receiver: Receiver;

  /** `serve` on the file's database and DATA_DIR (the signing key and the embedded database). */
  const serve = async () => {
    const service = startService(dataDir, env);
    services.push(service);
    httpUrl = `http://127.0.0.1:${(await service.listening).httpPort}`;
    return service;
  };

  beforeAll(async () => {
    testDb = DATABASE_URL ? await createTestDatabase() : undefined;
    dataDir = await preparedDataDir('atrium-webhooks-');
    // A short attempt timeout keeps the lease of an attempt a kill caught in flight short too.
    env = { ...databaseEnv(testDb, 'webhooks'), ...webhookEnv, WEBHOOK_TIMEOUT_SECONDS: '2' };
    receiver = await webhookReceiver((path) => answers.get(path) ?? 204);
    await serve();
    admin = await adminOver(httpUrl, dataDir);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await killAll(services);
    await receiver?.close();
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers to a receiver that refused connections for its first attempts once it is back, after more than one attempt', async () => {
    const api = adminApi(httpUrl, admin);
    const { port } = new URL(receiver.url('/'));
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(port) });
    try {
      await proxy.setMode('refuse');
      const endpoint = await api.createEndpoint(`http://127.0.0.1:${proxy.port}/down`);
      const { user } = await registerOver(httpUrl);
      const [refused] = await api.untilDeliveries(endpoint.id, (items) => (items[0]?.attempts ?? 0) >= 2);
      expect(refused).toMatchObject({
        status: 'pending',
        last_status_code: null,
        last_error: expect.any(String),
        next_attempt_at: expect.any(String),
      });
      await proxy.setMode('forward');
      const [delivered] = await api.untilDeliveries(endpoint.id, (items) => items[0]?.status === 'delivered');
      expect(delivered).toMatchObject({
        id: refused?.id,
        attempts: expect.any(Number),
        last_status_code: 204,
        last_error: null,
        next_attempt_at: null,
      });
      // The second attempt may have been under way when the first read saw it counted: it then
      // found the receiver back and delivered.
      expect(delivered?.attempts).toBeGreaterThanOrEqual(2);
      // Only attempts after the receiver came back reached it (one, unless an answer outlasted the timeout).
      const hooks = receiver.at('/down');
      expect(hooks.length).toBeGreaterThanOrEqual(1);
      expect(new Set(hooks.map((hook) => hook.headers['webhook-id']))).toEqual(new Set([delivered?.id]));
      expect(hooks.map(registeredUserId)).toEqual(hooks.map(() => user.id));
      expect(
        new Webhook(endpoint.secret).verify(
          hooks[0]?.body ?? '',
          hooks[0]?.headers as Record<string, string>,
        ),
      ).toBeTruthy();
    } finally {
      await proxy.close();
    }
  });

  it(
    'delivers an event committed before a kill -9 once the service is started again, with the webhook-id of the attempts before it',
    async () => {
      const api = adminApi(httpUrl, admin);
      // The receiver refuses with 503 until the process is gone, so the delivery exists, with its
      // id, and is pending when the kill comes; an attempt the kill catches in flight is due again
      // after its lease.
      answers.set('/crash', 503);
      const endpoint = await api.createEndpoint(receiver.url('/crash'));
      const { user } = await registerOver(httpUrl);
      const [pending] = await api.untilDeliveries(endpoint.id, (items) => items[0]?.last_status_code === 503);
      expect(pending).toMatchObject({ status: 'pending', attempts: expect.any(Number) });
      const killed = services.at(-1) as ServiceProcess;
      killed.child.kill('SIGKILL');
      await killed.exited;
      const beforeKill = receiver.at('/crash').length;
      expect(beforeKill).toBeGreaterThanOrEqual(1);
      answers.set('/crash', 204);

      await serve();
      const [delivered] = await adminApi(httpUrl, admin).untilDeliveries(
        endpoint.id,
        (items) => items[0]?.status === 'delivered',
      );
      expect(delivered).toMatchObject({
        id: pending?.id,
        last_status_code: 204,
        last_error: null,
        next_attempt_at: null,
        delivered_at: expect.any(String),
      });
      const hooks = receiver.at('/crash');
      expect(hooks.length).toBeGreaterThan(beforeKill);
      // Each request was an attempt; an attempt the kill caught may not have reached the receiver.
      expect(delivered?.attempts).toBeGreaterThanOrEqual(hooks.length);
      // Every attempt, before the kill and after the start, carried one id and the same bytes.
      expect(new Set(hooks.map((hook) => hook.headers['webhook-id']))).toEqual(new Set([pending?.id]));
      expect(new Set(hooks.map((hook) => hook.body)).size).toBe(1);
      expect(registeredUserId(hooks[0] as ReceivedHook)).toBe(user.id);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

// Two processes share a database only on Postgres (PGlite belongs to its process), and worker
// mode needs a shared Redis too.
describe.skipIf(!DATABASE_URL)(
  `webhook delivery by two nodes sharing the database${REDIS_URL ? ', one with WORKERS=2' : ''} (needs DATABASE_URL)`,
  () => {
    const REGISTRATIONS = 20;
    let testDb: TestDatabase;
    const dataDirs: string[] = [];
    const services: ServiceProcess[] = [];
    let receiver: Receiver;

    beforeAll(async () => {
      testDb = await createTestDatabase();
      receiver = await webhookReceiver();
    });

    afterAll(async () => {
      await killAll(services);
      await receiver?.close();
      await testDb?.drop();
      for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
    });

    it(
      'delivers each event exactly once to the receiver, whichever node and worker committed it',
      async () => {
        // One signing key for the deployment, from the env: the nodes start at once, each on a
        // DATA_DIR of its own (its control channel), and accept each other's tokens.
        const { privateKey } = generateKeyPairSync('rsa', {
          modulusLength: 2048,
          privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
          publicKeyEncoding: { type: 'spki', format: 'pem' },
        });
        // The default attempt timeout: a shorter one could time out a slow answer on a loaded
        // machine and retry it, a duplicate the receiver would rightly have to dedupe.
        const env = {
          ...databaseEnv(testDb, 'webhooks-nodes'),
          ...webhookEnv,
          JWT_SIGNING_KEY_PEM: privateKey,
        };
        const startNode = async (workers: string) => {
          const dataDir = await mkdtemp(join(tmpdir(), 'atrium-webhooks-node-'));
          dataDirs.push(dataDir);
          const service = startService(dataDir, { ...env, WORKERS: workers });
          services.push(service);
          return { dataDir, httpUrl: `http://127.0.0.1:${(await service.listening).httpPort}` };
        };
        // Three delivery jobs racing for the same rows: two workers of one node and another node.
        const [first, second] = await Promise.all([startNode(REDIS_URL ? '2' : '1'), startNode('1')]);
        const admin = await adminOver(first.httpUrl, first.dataDir);
        const api = adminApi(first.httpUrl, admin);
        const endpoint = await api.createEndpoint(receiver.url(`/nodes/${randomUUID()}`));
        const path = new URL(endpoint.url).pathname;

        const users = await Promise.all(
          Array.from({ length: REGISTRATIONS }, (_, i) => registerOver((i % 2 ? second : first).httpUrl)),
        );
        const items = await api.untilDeliveries(
          endpoint.id,
          (found) => found.length === REGISTRATIONS && found.every((item) => item.status === 'delivered'),
        );
        // Delivered rows are never claimed again: no request can follow the ones counted here.
        expect(items.map((item) => item.attempts)).toEqual(items.map(() => 1));
        const hooks = receiver.at(path);
        const ids = hooks.map((hook) => hook.headers['webhook-id']);
        expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
        expect([...ids].sort()).toEqual(items.map((item) => item.id).sort());
        expect(hooks.map(registeredUserId).sort()).toEqual(users.map(({ user }) => user.id).sort());
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);
