import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EventBus } from '../../src/platform/bus.js';
import { rootHandle, runStatement, transaction } from '../../src/platform/data-access.js';
import { MemoryKv } from '../../src/platform/kv/index.js';
import { createLogger } from '../../src/platform/log.js';
import {
  type DomainEvent,
  Outbox,
  type OutboxConsumer,
  type OutboxOptions,
} from '../../src/platform/outbox.js';
import { finishDeliveries } from '../../src/platform/outbox-store.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/**
 * The transactional outbox (src/platform/outbox.ts) on a real database: what it records and when,
 * and how the nodes' claims, leases and retries hand each event to its consumers.
 */

/** Generous: a poll every 20 ms finds a committed event long before this. */
const WAIT = { timeout: 20_000, interval: 10 };

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

describe('the outbox', () => {
  let testDb: TestDatabase;
  const data = () => testDb.db.data;
  const outboxes: Outbox[] = [];
  const logged: LogLine[] = [];
  const log = createLogger(
    { LOG_LEVEL: 'debug' },
    { write: (line: string) => logged.push(JSON.parse(line)) },
  );

  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterEach(async () => {
    for (const outbox of outboxes.splice(0)) await outbox.stop();
  });
  afterAll(async () => {
    await testDb?.drop();
  });

  /** An outbox polling every 20 ms, retrying after 20 ms doubled; stopped after each test. */
  const node = (consumers: OutboxConsumer[], options: Partial<OutboxOptions> = {}) => {
    const outbox = new Outbox({ data: data(), log, pollMs: 20, backoffBaseMs: 20, ...options });
    for (const consumer of consumers) outbox.consume(consumer);
    outboxes.push(outbox);
    return outbox;
  };
  /** A type no other test records. */
  const freshType = () => `test.${randomBytes(4).toString('hex')}`;
  const consumer = (
    type: string,
    handle: (event: DomainEvent) => Promise<void>,
    retry = { leaseSeconds: 30, maxAttempts: 5 },
    name = `test:${type}`,
  ): OutboxConsumer => ({ name, type, retry, handle });
  const recorded = (outbox: Outbox, type: string, payload: unknown) =>
    transaction(data(), (tx) => outbox.record(tx, type, payload));
  const rowsOf = async (type: string) => ({
    events: await queryRows<{ id: string; data: unknown; at: Date | string }>(
      testDb.db,
      'select id, data, at from outbox_events where type = ?',
      [type],
    ),
    deliveries: await queryRows<{ consumer: string; attempts: number }>(
      testDb.db,
      `select d.consumer, d.attempts from outbox_deliveries d join outbox_events e on e.id = d.event_id
       where e.type = ? order by d.consumer`,
      [type],
    ),
  });
  const linesAbout = (type: string) => logged.filter((line) => line.type === type);

  it('runs no statement at all recording a type no consumer takes', async () => {
    const outbox = node([consumer('test.taken', async () => {})]);
    expect(outbox.hasConsumers('test.taken')).toBe(true);
    expect(outbox.hasConsumers('test.untaken')).toBe(false);
    // A handle with no pool behind it: any statement run on it would throw.
    const nowhere = rootHandle(undefined as never);
    await expect(outbox.record(nowhere, 'test.untaken', { a: 1 })).resolves.toBeUndefined();
    await expect(outbox.recordAll(nowhere, 'test.untaken', [{ a: 1 }])).resolves.toBeUndefined();
  });

  it("records the event and one due delivery per consumer of its type in the caller's transaction", async () => {
    const type = freshType();
    const outbox = node([
      consumer(type, async () => {}, undefined, `${type}:a`),
      consumer(type, async () => {}, undefined, `${type}:b`),
    ]);
    await recorded(outbox, type, { user_id: 'u1', nested: { list: [1, 'two'] } });
    const { events, deliveries } = await rowsOf(type);
    expect(events.map((event) => event.data)).toEqual([{ user_id: 'u1', nested: { list: [1, 'two'] } }]);
    expect(deliveries).toEqual([
      { consumer: `${type}:a`, attempts: 0 },
      { consumer: `${type}:b`, attempts: 0 },
    ]);
  });

  it('gives a consumer whose condition is false at the recording no delivery, and writes no event none takes', async () => {
    const type = freshType();
    // The conditions read the recording statement's $2, the event's type, as a module's fragment would.
    const wanted = (name: string, condition: string) => ({
      ...consumer(type, async () => {}, undefined, `${type}:${name}`),
      onlyIf: condition,
    });
    const picky = node([wanted('never', `$2 = 'another type'`), wanted('always', `$2 = '${type}'`)]);
    await recorded(picky, type, { n: 1 });
    expect((await rowsOf(type)).deliveries).toEqual([{ consumer: `${type}:always`, attempts: 0 }]);

    const otherType = freshType();
    const nobody = node([{ ...consumer(otherType, async () => {}), onlyIf: 'false' }]);
    await recorded(nobody, otherType, { n: 1 });
    await transaction(data(), (tx) => nobody.recordAll(tx, otherType, [{ n: 2 }, { n: 3 }]));
    expect(await rowsOf(otherType)).toEqual({ events: [], deliveries: [] });
  });

  it('records nothing when the transaction rolls back', async () => {
    const type = freshType();
    const outbox = node([consumer(type, async () => {})]);
    await expect(
      transaction(data(), async (tx) => {
        await outbox.record(tx, type, { n: 1 });
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] });
  });

  it('hands each committed event to its handler once, then deletes it', async () => {
    const type = freshType();
    const seen: DomainEvent[] = [];
    const outbox = node([consumer(type, async (event) => void seen.push(event))]);
    outbox.start();
    await recorded(outbox, type, { n: 1 });
    const [event] = (await rowsOf(type)).events;
    await vi.waitFor(() => expect(seen).toHaveLength(1), WAIT);
    expect(seen[0]).toEqual({
      id: event?.id,
      type,
      at: new Date(event?.at ?? 0).toISOString(),
      data: { n: 1 },
    });
    // A second event handled means a later claim ran: the first was not handed out again.
    await recorded(outbox, type, { n: 2 });
    await vi.waitFor(() => expect(seen).toHaveLength(2), WAIT);
    expect(seen.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
  });

  it('removes in one statement the ended deliveries, their events, and no delivery claimed since', async () => {
    const type = freshType();
    const [a, b] = [`test:${type}:a`, `test:${type}:b`];
    const outbox = node([
      consumer(type, async () => {}, undefined, a),
      consumer(type, async () => {}, undefined, b),
    ]);
    await transaction(data(), (tx) => outbox.recordAll(tx, type, [{ n: 1 }, { n: 2 }]));
    const [first, second] = (await rowsOf(type)).events.map((event) => event.id) as [string, string];
    // Both consumers of the first event, and a claim of the second's that another claim replaced.
    await finishDeliveries(data(), [
      { event_id: first, consumer: a, attempts: null },
      { event_id: first, consumer: b, attempts: null },
      { event_id: second, consumer: a, attempts: 1 },
    ]);
    const left = await rowsOf(type);
    expect(left.events.map((event) => event.id)).toEqual([second]);
    expect(left.deliveries).toEqual([
      { consumer: a, attempts: 0 },
      { consumer: b, attempts: 0 },
    ]);
  });

  it('hands out nothing of a transaction still open', async ({ skip }) => {
    // The embedded database has one connection, which the open transaction holds: no claim could run.
    if (testDb.db.kind !== 'postgres') skip();
    const [type, marker] = [freshType(), freshType()];
    const seen: string[] = [];
    const outbox = node([
      consumer(type, async (event) => void seen.push(event.type)),
      consumer(marker, async (event) => void seen.push(event.type)),
    ]);
    outbox.start();
    let opened = () => {};
    let release = () => {};
    const isOpen = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = transaction(data(), async (tx) => {
      await outbox.record(tx, type, {});
      opened();
      await released;
    });
    await isOpen;
    // Committed after it, from outside its async context: a claim ran once this one is handled.
    await recorded(outbox, marker, {});
    await vi.waitFor(() => expect(seen).toEqual([marker]), WAIT);
    release();
    await held;
    await vi.waitFor(() => expect(seen).toEqual([marker, type]), WAIT);
  });

  it('retries a failing handler with doubling delays, then drops the delivery with an error log', async () => {
    const type = freshType();
    let calls = 0;
    const outbox = node([
      consumer(
        type,
        async () => {
          calls++;
          throw new Error(`failure ${calls}`);
        },
        { leaseSeconds: 30, maxAttempts: 3 },
      ),
    ]);
    outbox.start();
    await recorded(outbox, type, { n: 1 });
    const [event] = (await rowsOf(type)).events;
    await vi.waitFor(async () => {
      expect(linesAbout(type).filter((line) => line.level === 50)).toHaveLength(1);
      expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] });
    }, WAIT);
    expect(calls).toBe(3);
    const lines = linesAbout(type);
    expect(
      lines.filter((line) => line.level === 40).map((line) => [line.attempts, line.retry_in_ms]),
    ).toEqual([
      [1, 20],
      [2, 40],
    ]);
    expect(lines.find((line) => line.level === 50)).toMatchObject({
      msg: 'outbox: delivery dropped after its last attempt',
      event_id: event?.id,
      type,
      consumer: `test:${type}`,
      attempts: 3,
      err: { message: 'failure 3' },
    });
  });

  it('caps the retry delay at the lease, and completes a delivery whose retry succeeds', async () => {
    const type = freshType();
    let calls = 0;
    const outbox = node(
      [
        consumer(
          type,
          async () => {
            calls++;
            if (calls < 3) throw new Error('not yet');
          },
          { leaseSeconds: 0.5, maxAttempts: 5 },
        ),
      ],
      { backoffBaseMs: 400 },
    );
    outbox.start();
    await recorded(outbox, type, {});
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
    expect(calls).toBe(3);
    expect(linesAbout(type).map((line) => line.retry_in_ms)).toEqual([400, 500]);
  });

  it('hands a batch consumer the events of one claim at once, retrying them all when it fails', async () => {
    const type = freshType();
    const calls: number[][] = [];
    let failNext = true;
    const batching: OutboxConsumer = {
      ...consumer(type, async () => {
        throw new Error('handle is not called for a batch consumer');
      }),
      handleMany: async (events) => {
        calls.push(events.map((event) => (event.data as { n: number }).n));
        if (failNext) {
          failNext = false;
          throw new Error('refused once');
        }
      },
    };
    const outbox = node([batching]);
    await transaction(data(), (tx) => outbox.recordAll(tx, type, [{ n: 1 }, { n: 2 }, { n: 3 }]));
    outbox.start();
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
    // One call for the claim's three; then the three again, retried (in as many claims as their
    // retries came due in).
    expect([...(calls[0] ?? [])].sort()).toEqual([1, 2, 3]);
    expect(calls.slice(1).flat().sort()).toEqual([1, 2, 3]);
  });

  it('hands each event to exactly one of two nodes', async () => {
    const type = freshType();
    const handled = new Map<string, string[]>();
    const nodeOf = (name: string) =>
      node(
        [
          consumer(type, async (event) => {
            handled.set(event.id, [...(handled.get(event.id) ?? []), name]);
          }),
        ],
        { batchSize: 4 },
      );
    const [first, second] = [nodeOf('first'), nodeOf('second')];
    first.start();
    second.start();
    for (let n = 0; n < 30; n++) await recorded(first, type, { n });
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
    expect(handled.size).toBe(30);
    expect([...handled.values()].filter((nodes) => nodes.length !== 1)).toEqual([]);
  });

  it('hands a delivery claimed by a node that died to another node once its lease lapsed', async () => {
    const type = freshType();
    let started = 0;
    const retry = { leaseSeconds: 1, maxAttempts: 5 };
    const dying = node(
      [
        consumer(
          type,
          () => {
            started++;
            return new Promise<never>(() => {});
          },
          retry,
        ),
      ],
      { stopTimeoutMs: 0 },
    );
    dying.start();
    await recorded(dying, type, { n: 1 });
    await vi.waitFor(() => expect(started).toBe(1), WAIT);
    // Stopped without waiting for its handler, the node writes nothing more: as if killed.
    await dying.stop();
    expect((await rowsOf(type)).deliveries).toEqual([{ consumer: `test:${type}`, attempts: 1 }]);
    const seen: DomainEvent[] = [];
    const survivor = node([consumer(type, async (event) => void seen.push(event), retry)]);
    survivor.start();
    await vi.waitFor(() => expect(seen.map((event) => event.data)).toEqual([{ n: 1 }]), WAIT);
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
    expect(started).toBe(1);
  });

  it('drops without running it a delivery whose last attempt outlived its lease', async () => {
    const type = freshType();
    let calls = 0;
    const outbox = node([
      consumer(
        type,
        async () => {
          calls++;
        },
        { leaseSeconds: 30, maxAttempts: 2 },
      ),
    ]);
    await recorded(outbox, type, {});
    // The state a node leaves when it dies during the last attempt, once the lease lapsed.
    await queryRows(
      testDb.db,
      `update outbox_deliveries set attempts = 2, next_attempt_at = now() - interval '1 second'
       where event_id in (select id from outbox_events where type = ?)`,
      [type],
    );
    outbox.start();
    await vi.waitFor(async () => expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] }), WAIT);
    expect(calls).toBe(0);
    expect(linesAbout(type).map((line) => [line.level, line.attempts])).toEqual([[50, 3]]);
  });

  it('keeps polling while the database fails, saying so once, and delivers once it is back', async () => {
    const type = freshType();
    let down = true;
    let tries = 0;
    // The real database, behind a switch that fails every statement as a lost connection does.
    const flaky = rootHandle({
      acquire: async () => {
        tries++;
        if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return {} as never;
      },
      release: async () => {},
      run: (_connection, sql, params) => runStatement(data(), sql, params),
      single: false,
    });
    const seen: unknown[] = [];
    const outbox = new Outbox({ data: flaky, log, pollMs: 20 });
    outbox.consume(consumer(type, async (event) => void seen.push(event.data)));
    outboxes.push(outbox);
    const failures = () =>
      logged.filter((line) => line.msg === 'outbox: could not claim deliveries; retrying');
    const before = failures().length;
    outbox.start();
    await recorded(outbox, type, { n: 1 });
    await vi.waitFor(() => expect(tries).toBeGreaterThanOrEqual(5), WAIT);
    expect(failures().length).toBe(before + 1);
    down = false;
    await vi.waitFor(() => expect(seen).toEqual([{ n: 1 }]), WAIT);
    expect(logged.some((line) => line.msg === 'outbox: claiming deliveries again')).toBe(true);
  });

  it('waits on stop for its running handlers, and writes what they did', async () => {
    const type = freshType();
    let release = () => {};
    let started = false;
    const outbox = node([
      consumer(type, () => {
        started = true;
        return new Promise<void>((resolve) => {
          release = resolve;
        });
      }),
    ]);
    outbox.start();
    await recorded(outbox, type, {});
    await vi.waitFor(() => expect(started).toBe(true), WAIT);
    let stopped = false;
    const stopping = outbox.stop().then(() => {
      stopped = true;
    });
    await vi.waitFor(async () => expect((await rowsOf(type)).deliveries).toHaveLength(1), WAIT);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] });
  });

  it('gives up waiting on stop after stopTimeoutMs of a monotonic clock, even when the wall clock jumps', async () => {
    const type = freshType();
    let started = false;
    const neverEnds = () => {
      started = true;
      return new Promise<void>(() => {});
    };
    const outbox = node([consumer(type, neverEnds)], { stopTimeoutMs: 300 });
    outbox.start();
    await recorded(outbox, type, {});
    await vi.waitFor(() => expect(started).toBe(true), WAIT);
    // A wall clock a year ahead when stop() starts, then set right: neither ends the wait early
    // nor stretches it to a year (nor turns it into a spin of 1 ms timers).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 365 * 86_400_000 });
    try {
      const stopping = outbox.stop();
      // Its first turns (only microtasks) run with the clock ahead: the wait has begun.
      await new Promise((resolve) => setImmediate(resolve));
      vi.useRealTimers();
      await stopping;
    } finally {
      vi.useRealTimers();
    }
  });

  it('prunes deliveries no node claimed for too long, and events left without deliveries', async () => {
    const [type, orphanType] = [freshType(), freshType()];
    const outbox = node([consumer(type, async () => {})], { pruneIntervalMs: 20, abandonAfterSeconds: 60 });
    // A delivery to a consumer no node has any more, an hour overdue; an event whose deliveries all went.
    await recorded(outbox, type, {});
    await queryRows(
      testDb.db,
      `update outbox_deliveries set consumer = 'test:gone', next_attempt_at = now() - interval '1 hour'
       where event_id in (select id from outbox_events where type = ?)`,
      [type],
    );
    await queryRows(
      testDb.db,
      `insert into outbox_events (id, type, data, at) values (gen_random_uuid(), ?, '{}', now())`,
      [orphanType],
    );
    outbox.start();
    await vi.waitFor(async () => {
      expect(await rowsOf(type)).toEqual({ events: [], deliveries: [] });
      expect((await rowsOf(orphanType)).events).toEqual([]);
    }, WAIT);
    expect(
      logged.find((line) => line.msg?.startsWith('outbox: dropped deliveries no node claimed')),
    ).toMatchObject({
      consumers: ['test:gone'],
    });
  });

  describe('woken by commits', () => {
    /** Never polls again after its first claim: only an announcement can make it claim. */
    const NEVER = { pollMs: 3_600_000 };
    const kv = new MemoryKv();
    const bus = new EventBus(kv, { maxLen: 1, ttlMs: 1000 });
    let published = 0;
    const countingBus = {
      publish: (...args: Parameters<EventBus['publish']>) => {
        published++;
        return bus.publish(...args);
      },
      subscribe: bus.subscribe.bind(bus),
    };
    afterAll(async () => {
      bus.close();
      await kv.close();
    });
    /** A started node whose first claim is over: it claims again only when woken. */
    const idleNode = async (type: string, seen: unknown[], options: Partial<OutboxOptions>) => {
      const outbox = node([consumer(type, async (event) => void seen.push(event.data))], options);
      await recorded(outbox, type, 'first claim');
      outbox.start();
      await vi.waitFor(() => expect(seen).toEqual(['first claim']), WAIT);
      return outbox;
    };

    it('claims an event at the commit on the node that recorded it, with no bus', async () => {
      const type = freshType();
      const seen: unknown[] = [];
      const outbox = await idleNode(type, seen, NEVER);
      await recorded(outbox, type, { n: 1 });
      await vi.waitFor(() => expect(seen).toEqual(['first claim', { n: 1 }]), WAIT);
    });

    it('wakes the other nodes through the bus when an event recorded elsewhere commits', async () => {
      const type = freshType();
      const seen: unknown[] = [];
      await idleNode(type, seen, { ...NEVER, bus: countingBus });
      // Records without ever claiming, as a node without that consumer running would.
      const recorder = node([consumer(type, async () => {})], { bus: countingBus });
      await recorded(recorder, type, { n: 1 });
      await vi.waitFor(() => expect(seen).toEqual(['first claim', { n: 1 }]), WAIT);
    });

    it('announces a burst of commits at most once per announceEveryMs, the last ones included', async () => {
      const type = freshType();
      const seen: unknown[] = [];
      await idleNode(type, seen, { ...NEVER, bus: countingBus });
      const every = 1000;
      const recorder = node([consumer(type, async () => {})], { bus: countingBus, announceEveryMs: every });
      published = 0;
      const started = Date.now();
      await recorded(recorder, type, { n: 0 });
      await vi.waitFor(() => expect(seen).toHaveLength(2), WAIT);
      // Within the window: announced together once it is over, by the trailing announcement.
      for (let n = 1; n <= 20; n++) await recorded(recorder, type, { n });
      await vi.waitFor(() => expect(seen).toHaveLength(22), WAIT);
      expect(published).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - started) / every));
    });

    it('claims a failed delivery again when its retry is due, without waiting for the poll', async () => {
      const type = freshType();
      const attempts: unknown[] = [];
      const outbox = node(
        [
          consumer(type, async (event) => {
            attempts.push(event.data);
            if (attempts.length < 3) throw new Error('not yet');
          }),
        ],
        NEVER,
      );
      outbox.start();
      await recorded(outbox, type, { n: 1 });
      await vi.waitFor(() => expect(attempts).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]), WAIT);
      await vi.waitFor(async () => expect((await rowsOf(type)).events).toEqual([]), WAIT);
    });
  });

  it('refuses a consumer added twice or after start, and a second start', () => {
    const type = freshType();
    const outbox = node([consumer(type, async () => {})]);
    expect(() => outbox.consume(consumer(type, async () => {}))).toThrow(/added twice/);
    outbox.start();
    expect(() => outbox.consume(consumer(type, async () => {}, undefined, 'later'))).toThrow(/after start/);
    expect(() => outbox.start()).toThrow(/started twice/);
  });
});
