import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { type ClientRequest, request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { StreamPosition } from '../../protocol/stream-position.js';
import { configFrom } from '../../src/config.js';
import { openDatabase } from '../../src/platform/db.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';
import {
  adminOver,
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';
import { type ReceivedFrame, TestSocket } from '../helpers/ws-client.js';

const { DATABASE_URL, REDIS_URL } = process.env;
const BUYERS = 50;
const PRICE = 100;
const POOL_SIZE = 10;

interface Client {
  token: TokenResponse;
  socket: TestSocket;
  /** Where the user's event stream stood when the socket authenticated (the auth ack's position). */
  position: StreamPosition;
}

interface PurchaseRow {
  id: string;
  buyer_id: string;
  transaction_id: string;
}

/**
 * SIGTERM while purchases whose clients already left are still running: the process must wait for
 * them (up to SHUTDOWN_GRACE_MS) before it closes Redis and the database, so that every purchase
 * that committed also published its events, and none ends in an error of a closed dependency.
 */
describe('a SIGTERM while purchases whose clients left are still running', () => {
  let testDb: TestDatabase | undefined;
  let dataDir: string;
  let env: Record<string, string>;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    testDb = DATABASE_URL ? await createTestDatabase() : undefined;
    dataDir = await preparedDataDir('atrium-drain-');
    env = {
      DATABASE_URL: testDb?.url ?? '',
      REDIS_URL: REDIS_URL ?? '',
      REDIS_KEY_PREFIX: `test:drain:${randomBytes(6).toString('hex')}:`,
      ...(testDb ? { MIGRATE_ON_START: 'false' } : {}),
      REGISTER_IP_MAX_ATTEMPTS: '1000',
      ECONOMY_PURCHASE_RATE_LIMIT_COUNT: '1000',
      // Generous, so the drain finishes within it on a loaded machine; the test asserts it did.
      SHUTDOWN_GRACE_MS: '60000',
      // Purchases wait on the test's lock for as long as it takes the signal to arrive.
      DATABASE_QUERY_TIMEOUT_MS: '0',
      DATABASE_POOL_SIZE: String(POOL_SIZE),
    };
  });

  afterAll(async () => {
    for (const { child, exited } of services) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
    await testDb?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'finishes every one before it closes Redis and the database: each committed purchase has its events, no request fails, the process exits 0',
    async () => {
      const service = startService(dataDir, env);
      services.push(service);
      const { httpPort = 0, wsPort } = await service.listening;
      const api = restClient(`http://127.0.0.1:${httpPort}`);
      const wsUrl = `ws://127.0.0.1:${wsPort}/ws`;

      const admin = await adminOver(api.url, dataDir);
      const seller = await registerOver(api.url);
      const listingId = await consumableListing(api, seller);
      const buyers: TokenResponse[] = [];
      for (let i = 0; i < BUYERS; i++) {
        const buyer = await registerOver(api.url);
        await api.send(admin, 'POST', '/api/economy/admin/grants', {
          user_id: buyer.user.id,
          amount: PRICE * 10,
          reason: 'shutdown drain test',
        });
        buyers.push(buyer);
      }
      const sellerClient = await connect(wsUrl, seller);
      const buyerClients = await Promise.all(buyers.map((buyer) => connect(wsUrl, buyer)));

      // On Postgres the test holds the listing's row, so purchases stay in flight until the
      // signal came. The embedded database belongs to the process, so there they run as they
      // come (the signal finds at most one under way: PGlite runs in the process's own thread).
      const hold = testDb ? await holdRow(testDb, listingId) : undefined;
      const purchases = buyers.map((buyer) => startPurchase(httpPort, buyer, listingId));
      const held = hold ? await hold.waiting() : 0;
      if (!hold) await sellerClient.socket.next((frame) => frame.t === 'economy.sale', 60_000);
      for (const purchase of purchases) purchase.destroy();
      for (const client of [sellerClient, ...buyerClients]) client.socket.ws.terminate();
      service.child.kill('SIGTERM');
      await eventually(() => service.lines.some((line) => line.msg === 'shutting down'), 'the drain');
      if (hold) {
        // Released once shutdown says what it waits for, so what it waits for includes them all.
        await eventually(
          () => service.lines.some((line) => line.msg === 'waiting for in-flight work'),
          'the wait for in-flight work',
        );
        await hold.release();
      }

      expect(await service.exited).toBe(0);
      const afterSignal = service.lines.slice(service.lines.findIndex((l) => l.msg === 'shutting down'));
      // Warnings and errors: a handler failing on a closed pool or KV store, a lost event, a failed step.
      expect(afterSignal.filter((line) => Number(line.level) >= 40)).toEqual([]);
      if (hold) {
        // The held purchases were still running when shutdown began, and it waited for them.
        const waiting = afterSignal.find((line) => line.msg === 'waiting for in-flight work');
        const running = waiting?.running as Record<string, number> | undefined;
        expect(running?.['POST /api/economy/purchases']).toBeGreaterThanOrEqual(held);
        expect(afterSignal.map((line) => line.msg)).toContain('in-flight work finished');
      }
      expect(service.lines.at(-1)?.msg).toBe('shutdown complete');

      const committed = await committedPurchases(testDb, dataDir, listingId);
      expect(committed.length).toBeGreaterThanOrEqual(Math.max(held, 1));
      // The in-process KV store's recorded streams end with the process; Redis keeps them.
      if (!REDIS_URL) return;
      const next = startService(dataDir, env);
      services.push(next);
      const nextWs = `ws://127.0.0.1:${(await next.listening).wsPort}/ws`;
      const sellerEvents = await replayed(nextWs, sellerClient);
      for (const purchase of committed) {
        const buyer = buyerClients.find((client) => client.token.user.id === purchase.buyer_id) as Client;
        expect(await replayed(nextWs, buyer)).toContainEqual(balanceEvent(purchase.transaction_id));
        expect(sellerEvents).toContainEqual(balanceEvent(purchase.transaction_id));
        expect(sellerEvents).toContainEqual(
          expect.objectContaining({ t: 'economy.sale', d: expect.objectContaining({ id: purchase.id }) }),
        );
      }
      next.child.kill('SIGTERM');
      expect(await next.exited).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS * 2,
  );
});

/** Polls `check` until it holds, for up to `deadlineMs` (a loaded machine is slow). */
async function eventually(check: () => boolean | Promise<boolean>, what: string, deadlineMs = 60_000) {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Locks the listing's row in a transaction of the test's own: every purchase of it waits on the
 * lock inside its transaction. `waiting` resolves once every connection of the service's pool
 * does, with their number; `release` commits.
 */
async function holdRow(testDb: TestDatabase, listingId: string) {
  const client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
  await client.query('begin');
  await client.query('select 1 from marketplace_listings where id = $1 for update', [listingId]);
  const waiters = async () => {
    const [row] = await queryRows<{ n: number }>(
      testDb.db,
      `select count(*)::int as n from pg_stat_activity
       where datname = current_database() and wait_event_type = 'Lock'`,
    );
    return row?.n ?? 0;
  };
  return {
    async waiting() {
      await eventually(async () => (await waiters()) >= POOL_SIZE, 'purchases waiting on the lock');
      return POOL_SIZE;
    },
    async release() {
      await client.query('commit');
      await client.end();
    },
  };
}

function restClient(url: string) {
  return {
    url,
    /** A JSON request with a fresh Idempotency-Key; anything but 2xx throws with the answer. */
    async send(as: TokenResponse, method: string, path: string, body: object): Promise<{ id: string }> {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${as.access_token}`,
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as { id: string };
    },
  };
}

/** A published consumable item of the seller's, listed without a quantity limit; answers the listing id. */
async function consumableListing(api: ReturnType<typeof restClient>, seller: TokenResponse): Promise<string> {
  const item = await api.send(seller, 'POST', '/api/economy/items', {
    name: 'Potion',
    asset_type: 'avatar_item',
    consumable: true,
  });
  await api.send(seller, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
  return (await api.send(seller, 'POST', '/api/economy/listings', { item_id: item.id, price: PRICE })).id;
}

/** An authenticated socket, and the position of the user's stream at that moment. */
async function connect(wsUrl: string, token: TokenResponse): Promise<Client> {
  const socket = await TestSocket.connect(wsUrl);
  socket.sendFrame({ t: 'auth', id: 0, d: { token: token.access_token } });
  const ack = await socket.next((frame) => frame.id === 0, 30_000);
  expect(ack.t).toBe('ack');
  return { token, socket, position: (ack.d as { position: StreamPosition }).position };
}

/** A purchase on a connection of its own, which the test destroys as a client that goes away does. */
function startPurchase(port: number, buyer: TokenResponse, listingId: string): ClientRequest {
  const body = JSON.stringify({ listing_id: listingId });
  const call = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/api/economy/purchases',
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      authorization: `Bearer ${buyer.access_token}`,
      'idempotency-key': randomUUID(),
    },
  });
  // The client gives up on its answer: the socket's end is what the test is about.
  call.on('error', () => {});
  call.on('response', (response) => response.resume());
  call.end(body);
  return call;
}

/** The purchases of the listing the database holds once the process exited. */
async function committedPurchases(
  testDb: TestDatabase | undefined,
  dataDir: string,
  listingId: string,
): Promise<PurchaseRow[]> {
  const sql = 'select id, buyer_id, transaction_id from purchases where listing_id = ?';
  if (testDb) return queryRows<PurchaseRow>(testDb.db, sql, [listingId]);
  // The embedded database is the process's DATA_DIR, free again now that the process is gone.
  const db = await openDatabase(configFrom({ DATA_DIR: dataDir }));
  try {
    return await queryRows<PurchaseRow>(db, sql, [listingId]);
  } finally {
    await db.close();
  }
}

/** The events of the client's stream after its position, replayed by a fresh service to a new socket. */
async function replayed(wsUrl: string, client: Client): Promise<ReceivedFrame[]> {
  const socket = await TestSocket.connect(wsUrl);
  try {
    socket.sendFrame({ t: 'auth', id: 0, d: { token: client.token.access_token, recover: client.position } });
    const ack = await socket.next((frame) => frame.id === 0, 30_000);
    expect(ack).toMatchObject({ t: 'ack', d: { recovered: true } });
    // Replayed events come before the ack, and nothing else publishes to these users now.
    return [...socket.frames];
  } finally {
    socket.close();
  }
}

function balanceEvent(transactionId: string) {
  return expect.objectContaining({
    t: 'economy.balance',
    d: expect.objectContaining({ transaction_id: transactionId }),
  });
}
