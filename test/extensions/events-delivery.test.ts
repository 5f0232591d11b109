import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import type { Database } from '../../src/platform/db.js';
import { bearer, PASSWORD, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { buildOwningApp, buildTestCluster, type TestCluster } from '../helpers/app.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  registerOver,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';
import { authedSocket, type TestSocket } from '../helpers/ws-client.js';

/**
 * Domain events (docs/extensions.md, "Domain events") delivered to an extension's handlers end to
 * end: on one node, across two nodes, across the workers of `serve` (WORKERS=2) and across a
 * kill -9 of the process that was running the handler. The fixture extension appends a line per
 * call of its handlers to one file every process shares (test/extensions/fixtures/events-recorder.mjs).
 */

const RECORDER = fileURLToPath(new URL('./fixtures/events-recorder.mjs', import.meta.url));
/** The outbox polls every 250 ms; a loaded two-core machine may take seconds more. */
const EVENT_WAIT = { timeout: 20_000, interval: 100 };
const PROCESS_EVENT_WAIT = { timeout: 60_000, interval: 200 };
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Handling {
  phase: 'started' | 'failed' | 'handled';
  /** The attempt at the event in the process that made it. */
  attempt: number;
  pid: number;
  event: { id: string; type: string; at: string; data: Record<string, unknown> };
  caller?: unknown;
  account?: { id: string; username: string } | null;
}

interface Message {
  id: string;
  body: string;
  [field: string]: unknown;
}

/** A fresh file for the fixture to note its handlings in, and their reader. */
async function handlingLog() {
  const dir = await mkdtemp(join(tmpdir(), 'atrium-events-'));
  const path = join(dir, 'handlings.jsonl');
  return {
    path,
    /** Every line written so far; a line still being written (no newline yet) is left for later. */
    async read(): Promise<Handling[]> {
      const text = await readFile(path, 'utf8').catch(() => '');
      return text
        .split('\n')
        .slice(0, -1)
        .map((line) => JSON.parse(line) as Handling);
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
type HandlingLog = Awaited<ReturnType<typeof handlingLog>>;

const handled = (handlings: readonly Handling[], type?: string) =>
  handlings.filter((h) => h.phase === 'handled' && (type === undefined || h.event.type === type));
const handledMessages = (handlings: readonly Handling[]) =>
  handled(handlings, 'dm.message').map((h) => h.event.data.message as Message);

const pendingDeliveries = async (db: Database) =>
  (await queryRows<{ n: number }>(db, 'select count(*)::int as n from outbox_deliveries'))[0]?.n;

/**
 * The handlings once `done` holds of them and the outbox has no delivery left, so that no handler
 * can run after the test counted: a delivery leaves the table once its handler succeeded (or it
 * was dropped), and until then its lease keeps every other node from running it again.
 */
async function settled(
  db: Database,
  log: HandlingLog,
  done: (handlings: Handling[]) => boolean,
  wait = EVENT_WAIT,
): Promise<Handling[]> {
  await vi.waitFor(async () => {
    expect(done(await log.read())).toBe(true);
    expect(await pendingDeliveries(db)).toBe(0);
  }, wait);
  return log.read();
}

/** Each event handled at most once: the ids handled more than once (none). */
function expectNoEventHandledTwice(handlings: readonly Handling[]): void {
  const ids = handled(handlings).map((h) => h.event.id);
  expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
}

/** Each message handled exactly once, as `dm.send` answered it, in a well-formed event. */
function expectMessagesHandledOnce(handlings: readonly Handling[], answers: readonly Message[]): void {
  const events = handled(handlings, 'dm.message').map((h) => h.event);
  expect(answers.map((answer) => events.filter((e) => (e.data.message as Message).id === answer.id))).toEqual(
    answers.map((answer) => [
      {
        id: expect.any(String),
        type: 'dm.message',
        at: expect.stringMatching(ISO_UTC),
        data: { message: answer },
      },
    ]),
  );
  expectNoEventHandledTwice(handlings);
}

const allHandled = (answers: readonly Message[]) => (handlings: Handling[]) => {
  const ids = new Set(handledMessages(handlings).map((message) => message.id));
  return answers.every((answer) => ids.has(answer.id));
};

async function dmOverRest(app: Pick<App, 'http'>, from: TokenResponse, to: TokenResponse, body: string) {
  const sent = await app.http.inject({
    method: 'POST',
    url: `/api/chat/dm/${to.user.id}/messages`,
    headers: bearer(from.access_token),
    payload: { body },
  });
  expect(sent.statusCode, sent.body).toBe(201);
  return sent.json() as Message;
}

let frameId = 1;
/** dm.send over the socket; its ack may take seconds on a loaded machine with many sends at once. */
async function dmOverSocket(socket: TestSocket, to: TokenResponse, body: string) {
  const id = frameId++;
  socket.sendFrame({ t: 'dm.send', id, d: { user_id: to.user.id, body } });
  const ack = await socket.next((f) => f.id === id && (f.t === 'ack' || f.t === 'error'), 20_000);
  expect(ack.t, JSON.stringify(ack)).toBe('ack');
  return ack.d as Message;
}

type Send = (from: TokenResponse, to: TokenResponse, body: string) => Promise<Message>;

/** `count` messages each way between two users: through `overRest` and over each user's socket. */
function conversation(
  overRest: Send,
  [alice, bob]: readonly [TokenResponse, TokenResponse],
  [aliceSocket, bobSocket]: readonly [TestSocket, TestSocket],
  count: number,
): Promise<Message[]> {
  const sends = Array.from({ length: count }, (_, i) => [
    overRest(alice, bob, `rest ${i}`),
    overRest(bob, alice, `rest back ${i}`),
    dmOverSocket(aliceSocket, bob, `socket ${i}`),
    dmOverSocket(bobSocket, alice, `socket back ${i}`),
  ]).flat();
  return Promise.all(sends);
}

describe('domain-event delivery to extensions', () => {
  let log: HandlingLog;
  beforeAll(async () => {
    log = await handlingLog();
    // The fixture reads it at each call; this test process builds the in-process apps.
    process.env.EVENTS_DELIVERY_LOG = log.path;
  });
  afterAll(async () => {
    delete process.env.EVENTS_DELIVERY_LOG;
    await log.remove();
  });

  describe('on one node', () => {
    let owned: Awaited<ReturnType<typeof buildOwningApp>>;
    let app: App;
    let wsUrl: string;
    const sockets: TestSocket[] = [];
    beforeAll(async () => {
      owned = await buildOwningApp({
        EXTENSIONS: RECORDER,
        EXTENSION_EVENT_MAX_ATTEMPTS: 3,
        DM_RATE_LIMIT_COUNT: 1000,
        REGISTER_IP_MAX_ATTEMPTS: 1_000_000,
      });
      app = owned.app;
      const { wsPort } = await app.listen();
      wsUrl = `ws://127.0.0.1:${wsPort}/ws`;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.close();
      await owned.dispose();
    });
    const pair = async () => {
      const users = [await registerUser(app), await registerUser(app)] as const;
      const opened = [
        await authedSocket(wsUrl, users[0].access_token),
        await authedSocket(wsUrl, users[1].access_token),
      ] as const;
      sockets.push(...opened);
      return { users, sockets: opened };
    };
    const logsAbout = (eventId: string, msg: string) =>
      owned.logged.filter((line) => line.msg === msg && line.event_id === eventId);

    it('handles each direct message once after it was stored, over REST and over the socket, with the event as dm.send answered it', async () => {
      const { users, sockets: opened } = await pair();
      const answers = await conversation((...dm) => dmOverRest(app, ...dm), users, opened, 5);
      const handlings = await settled(app.db, log, allHandled(answers));
      expectMessagesHandledOnce(handlings, answers);
      const events = handled(handlings, 'dm.message').map((h) => h.event);
      expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
      for (const { at } of events) expect(new Date(at).toISOString()).toBe(at);
      expect(handled(handlings, 'dm.message').every((h) => h.caller === null)).toBe(true);
    });

    it('handles user.registered after the account committed, and once for two registrations racing for one name', async () => {
      const username = uniqueUsername();
      const register = () =>
        app.http.inject({
          method: 'POST',
          url: '/api/auth/register',
          payload: { username, password: PASSWORD, accept_terms: true, confirm_18_plus: true },
        });
      const answers = await Promise.all([register(), register()]);
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 409]);
      const created = answers
        .map((answer) => answer.json() as TokenResponse)
        .find((answer) => answer.user)?.user;
      const ofName = (handlings: readonly Handling[]) =>
        handled(handlings, 'user.registered').filter((h) => h.event.data.username === username);
      const handlings = await settled(app.db, log, (lines) => ofName(lines).length > 0);
      expect(ofName(handlings).map((h) => [h.event.data, h.account?.id])).toEqual([
        [{ user_id: created?.id, username, created_at: expect.any(String) }, created?.id],
      ]);
    });

    it('handles a purchase once, and not again for the answer replayed for its Idempotency-Key', async () => {
      const write = async (user: TokenResponse, url: string, payload: object, key = randomUUID()) => {
        const response = await app.http.inject({
          method: url.includes('/items/') ? 'PATCH' : 'POST',
          url,
          headers: { ...bearer(user.access_token), 'idempotency-key': key },
          payload,
        });
        expect(response.statusCode, response.body).toBeLessThan(300);
        return response;
      };
      const [admin, seller, buyer] = [
        await registerWithRole(app, 'admin'),
        await registerUser(app),
        await registerUser(app),
      ];
      await write(admin, '/api/economy/admin/grants', {
        user_id: buyer.user.id,
        amount: 500,
        reason: 'test',
      });
      const item = (
        await write(seller, '/api/economy/items', { name: 'Hat', asset_type: 'clothing' })
      ).json();
      await write(seller, `/api/economy/items/${item.id}`, { state: 'published' });
      const listing = (await write(seller, '/api/economy/listings', { item_id: item.id, price: 100 })).json();
      const key = randomUUID();
      const purchase = (await write(buyer, '/api/economy/purchases', { listing_id: listing.id }, key)).json();
      const ofPurchase = (handlings: readonly Handling[]) =>
        handled(handlings, 'economy.purchase.completed').filter(
          (h) => (h.event.data.purchase as { id: string }).id === purchase.id,
        );
      await settled(app.db, log, (lines) => ofPurchase(lines).length > 0);
      const replay = await write(buyer, '/api/economy/purchases', { listing_id: listing.id }, key);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      const handlings = await settled(app.db, log, () => true);
      const shown = await app.http.inject({
        method: 'GET',
        url: `/api/economy/purchases/${purchase.id}`,
        headers: bearer(buyer.access_token),
      });
      expect(ofPurchase(handlings).map((h) => h.event.data)).toEqual([{ purchase: shown.json() }]);
    });

    it('retries a failing handler with doubling delays until it succeeds', async () => {
      const { users } = await pair();
      const answer = await dmOverRest(app, users[0], users[1], 'fails twice');
      const handlings = await settled(app.db, log, allHandled([answer]));
      const ofMessage = handlings.filter(
        (h) => (h.event.data.message as Message | undefined)?.id === answer.id,
      );
      expect(ofMessage.map((h) => [h.phase, h.attempt])).toEqual([
        ['failed', 1],
        ['failed', 2],
        ['handled', 3],
      ]);
      const eventId = ofMessage[0]?.event.id as string;
      expect(logsAbout(eventId, 'outbox: delivery failed; retrying').map((line) => line.retry_in_ms)).toEqual(
        [1000, 2000],
      );
      expect(logsAbout(eventId, 'outbox: delivery dropped after its last attempt')).toEqual([]);
    });

    it('drops an event for a handler that failed EXTENSION_EVENT_MAX_ATTEMPTS times, with an error log', async () => {
      const { users } = await pair();
      const answer = await dmOverRest(app, users[0], users[1], 'always fails');
      const ofMessage = (handlings: readonly Handling[]) =>
        handlings.filter((h) => (h.event.data.message as Message | undefined)?.id === answer.id);
      // Settled: the delivery is gone, so no attempt can follow the third.
      const handlings = await settled(app.db, log, (lines) => ofMessage(lines).length >= 3);
      expect(ofMessage(handlings).map((h) => [h.phase, h.attempt])).toEqual([
        ['failed', 1],
        ['failed', 2],
        ['failed', 3],
      ]);
      const eventId = ofMessage(handlings)[0]?.event.id as string;
      expect(logsAbout(eventId, 'outbox: delivery dropped after its last attempt')).toEqual([
        expect.objectContaining({ level: 50, type: 'dm.message', attempts: 3 }),
      ]);
      expect(owned.logged).toContainEqual(
        expect.objectContaining({
          level: 50,
          msg: 'an extension call failed',
          extension: 'events_recorder',
          kind: 'event',
          name: 'dm.message',
          message: `attempt 3 at ${eventId} fails`,
        }),
      );
    });
  });

  describe('across two nodes', () => {
    let cluster: TestCluster;
    const sockets: TestSocket[] = [];
    beforeAll(async () => {
      cluster = await buildTestCluster(2, { EXTENSIONS: RECORDER, DM_RATE_LIMIT_COUNT: 1000 });
    });
    afterAll(async () => {
      for (const socket of sockets) socket.close();
      await cluster?.close();
    });

    it('handles each event once in the cluster, whichever node stored it', async () => {
      const answers: Message[] = [];
      const users: TokenResponse[] = [];
      for (const node of cluster.nodes) {
        const pair = [await registerUser(node), await registerUser(node)] as const;
        const opened = [
          await authedSocket(node.wsUrl, pair[0].access_token),
          await authedSocket(node.wsUrl, pair[1].access_token),
        ] as const;
        sockets.push(...opened);
        users.push(...pair);
        answers.push(...(await conversation((...dm) => dmOverRest(node, ...dm), pair, opened, 5)));
      }
      const db = cluster.nodes[0]?.db as Database;
      const registered = (handlings: readonly Handling[]) =>
        handled(handlings, 'user.registered').filter((h) =>
          users.some((user) => user.user.id === h.event.data.user_id),
        );
      const handlings = await settled(
        db,
        log,
        (lines) => allHandled(answers)(lines) && registered(lines).length >= users.length,
      );
      expectMessagesHandledOnce(handlings, answers);
      expect(
        registered(handlings)
          .map((h) => h.event.data.user_id)
          .sort(),
      ).toEqual(users.map((user) => user.user.id).sort());
    });
  });
});

const { DATABASE_URL, REDIS_URL } = process.env;

describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'domain-event delivery across processes of serve (needs DATABASE_URL and REDIS_URL)',
  () => {
    let testDb: TestDatabase;
    let dataDir: string;
    let log: HandlingLog;
    const running: ServiceProcess[] = [];
    const sockets: TestSocket[] = [];
    beforeAll(async () => {
      testDb = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'atrium-events-serve-'));
      log = await handlingLog();
    });
    afterAll(async () => {
      for (const socket of sockets) socket.close();
      for (const service of running) {
        if (service.child.exitCode === null && service.child.signalCode === null)
          service.child.kill('SIGTERM');
        await service.exited;
      }
      await testDb?.drop();
      await rm(dataDir, { recursive: true, force: true });
      await log?.remove();
    });

    /** `serve` on the test's database and Redis, the recorder loaded. */
    const serve = (env: Record<string, string>) => {
      const service = startService(dataDir, {
        DATABASE_URL: testDb.url as string,
        REDIS_URL: REDIS_URL as string,
        REDIS_KEY_PREFIX: `test:events:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
        EXTENSIONS: RECORDER,
        EVENTS_DELIVERY_LOG: log.path,
        DM_RATE_LIMIT_COUNT: '1000',
        ...env,
      });
      running.push(service);
      return service;
    };
    const dmOver = async (httpUrl: string, from: TokenResponse, to: TokenResponse, body: string) => {
      const sent = await fetch(`${httpUrl}/api/chat/dm/${to.user.id}/messages`, {
        method: 'POST',
        headers: { ...bearer(from.access_token), 'content-type': 'application/json' },
        body: JSON.stringify({ body }),
      });
      expect(sent.status, await sent.clone().text()).toBe(201);
      return (await sent.json()) as Message;
    };

    // One test, two starts: each start of serve costs seconds to tens of seconds.
    it(
      'leaves the handler a process killed with SIGKILL was running to the next start, which with WORKERS=2 handles each event once',
      async () => {
        // Its claims' lease is EXTENSION_EVENT_RETRY_SECONDS, shorter than the hanging call's deadline.
        const first = serve({
          EXTENSION_EVENT_RETRY_SECONDS: '2',
          EXTENSION_TIMEOUT_MS: '60000',
          EVENTS_DELIVERY_HANG: '1',
        });
        const firstUrl = `http://127.0.0.1:${(await first.listening).httpPort}`;
        const users = [await registerOver(firstUrl), await registerOver(firstUrl)] as const;
        // Answered while its handler hangs: handlers never delay the answer.
        const crashed = await dmOver(firstUrl, users[0], users[1], 'through a crash');
        await vi.waitFor(async () => {
          const started = (await log.read()).filter((h) => h.phase === 'started');
          expect(started.map((h) => (h.event.data.message as Message | undefined)?.id)).toContain(crashed.id);
        }, PROCESS_EVENT_WAIT);
        first.child.kill('SIGKILL');
        await first.exited;

        const next = serve({ WORKERS: '2' });
        const { httpPort, wsPort } = await next.listening;
        const httpUrl = `http://127.0.0.1:${httpPort}`;
        // A connection each: the workers take them in turn.
        const opened = [
          await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, users[0].access_token),
          await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, users[1].access_token),
        ] as const;
        sockets.push(...opened);
        const answers = await conversation((...dm) => dmOver(httpUrl, ...dm), users, opened, 5);
        const handlings = await settled(
          testDb.db,
          log,
          allHandled([crashed, ...answers]),
          PROCESS_EVENT_WAIT,
        );
        expectMessagesHandledOnce(handlings, [crashed, ...answers]);
        // What the killed process had started (the registrations too), the next start handled.
        const started = [...new Set(handlings.filter((h) => h.phase === 'started').map((h) => h.event.id))];
        expect(started.map((id) => handled(handlings).filter((h) => h.event.id === id).length)).toEqual(
          started.map(() => 1),
        );
        // The killed process finished none; of the next start, the workers ran them (the primary builds no app).
        const pids = new Set(handled(handlings).map((h) => h.pid));
        expect(pids.has(first.child.pid as number) || pids.has(next.child.pid as number)).toBe(false);
      },
      PROCESS_TEST_TIMEOUT_MS * 2,
    );
  },
);
