import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { configFrom } from '../../src/config.js';
import { consumeWebhookEvents } from '../../src/modules/webhooks/fan-out.js';
import { EventBus } from '../../src/platform/bus.js';
import { transaction } from '../../src/platform/data-access.js';
import { openDatabase } from '../../src/platform/db.js';
import { createKv, redisTopology } from '../../src/platform/kv/index.js';
import { Outbox } from '../../src/platform/outbox.js';
import { cpuWindow } from '../realtime/process-stats.js';
import { type Api, type Latency, latency, postgresSql } from '../worlds/harness.js';
import { runBarePost, take } from './deliveries.js';
import { benchEvent, EVENT_TYPE, paced } from './events.js';

/**
 * Measurement 2 (Postgres): the outbox lag, from an event's commit to its delivery's arrival at the
 * receiver, at a steady RATE events/s. The bench records each event as a service does, through an
 * Outbox with the webhooks' consumers (never started: the service's node claims and handles the
 * events, woken by the announcements this one makes on the service's Redis as another node's
 * would) in a transaction of its own on the service's database; the service fans it out to the
 * lag endpoint and delivers it. The receiver stamps the arrival; the body's `created_at` is the
 * event's time (the recording transaction's now(), just before its commit). The first WARM_UP
 * seconds are left out. Afterwards the deliveries' rows split the lag in two: the wait for the
 * fan-out (the delivery row's created_at) and the delivery job's part (its delivered_at). The
 * floor: the bare script posting at the same rate, each body's created_at its send time.
 */

export const RATE = 500;
const WARM_UP_SECONDS = 2;
/** How long the measured events may take to arrive after the last one was recorded. */
const DRAIN_MS = 10_000;

export interface LagResults {
  rate: number;
  recorded: number;
  arrived: number;
  /** How long recording the measured events took: about `seconds` when the rate was held. */
  recordSeconds: number;
  lag: Latency;
  /** The service's CPU while the measured events were recorded. */
  serviceCores: number;
  /** Deliveries the fan-out wrote per second, from its first to its last (below RATE: the outbox fell behind). */
  fanOutPerSecond: number;
  /** From the event's time to its delivery row (the outbox's claim and the fan-out), and from there to delivered_at. */
  fanOut: Latency;
  delivery: Latency;
  /** The bare script at RATE: each post from its send to its arrival. */
  floor: Latency;
}

export async function measureLag(
  env: Record<string, string>,
  servicePid: number,
  admin: Api,
  endpointId: string,
  receiver: { url: string; secret: string },
  seconds: number,
): Promise<LagResults> {
  const config = configFrom(env);
  const db = await openDatabase(config);
  const kv = await createKv(redisTopology(config), { namespace: config.REDIS_KEY_PREFIX });
  const bus = new EventBus(kv, { maxLen: 1, ttlMs: 1000 });
  const outbox = new Outbox({ data: db.data, log: pino({ level: 'silent' }), bus });
  consumeWebhookEvents(outbox, { data: () => db.data, clock: () => new Date(), delivered: () => {} });
  const record = () =>
    transaction(db.data, (tx) => outbox.record(tx, EVENT_TYPE, benchEvent(new Date()).data));
  try {
    await admin.ok('PATCH', `/api/admin/webhooks/${endpointId}`, { enabled: true });
    await paced(RATE, WARM_UP_SECONDS, record);
    const since = Date.now();
    await take(receiver.url);
    const cpu = await cpuWindow(servicePid);
    const started = performance.now();
    await paced(RATE, seconds, record);
    const recordSeconds = (performance.now() - started) / 1000;
    const { serverCores } = await cpu();
    const recorded = RATE * seconds;
    const arrivals: [number, number][] = [];
    for (const end = performance.now() + DRAIN_MS; performance.now() < end; await sleep(100)) {
      arrivals.push(...(await take(receiver.url)).filter(([created]) => created >= since));
      if (arrivals.length >= recorded) break;
    }
    await admin.ok('PATCH', `/api/admin/webhooks/${endpointId}`, { enabled: false });
    const split = await lagSplit(env.DATABASE_URL as string, endpointId, since);
    await take(receiver.url);
    const bare = await runBarePost({ ...receiver, seconds, concurrency: 0, rate: RATE });
    const floor = await take(receiver.url);
    if (bare.failed > 0) throw new Error(`the bare script's ${bare.failed} posts failed`);
    return {
      rate: RATE,
      recorded,
      recordSeconds,
      serviceCores: serverCores,
      arrived: arrivals.length,
      lag: latency(arrivals.map(([created, arrived]) => arrived - created)),
      ...split,
      floor: latency(floor.map(([created, arrived]) => arrived - created)),
    };
  } finally {
    await db.close();
    bus.close();
    await kv.close();
  }
}

/** The measured events' deliveries, from their rows: event time to fan-out, fan-out to delivered. */
async function lagSplit(databaseUrl: string, endpointId: string, since: number) {
  const sql = await postgresSql(databaseUrl);
  try {
    const rows = await sql.query<{ fan_out: number; delivery: number }>(
      `select extract(epoch from created_at - event_at) * 1000 as fan_out,
              extract(epoch from delivered_at - created_at) * 1000 as delivery
       from (select created_at, delivered_at, (body::jsonb ->> 'created_at')::timestamptz as event_at
             from webhook_deliveries where endpoint_id = $1 and status = 'delivered') d
       where event_at >= $2`,
      [endpointId, new Date(since)],
    );
    const [span] = await sql.query<{ seconds: number }>(
      `select extract(epoch from max(created_at) - min(created_at)) as seconds from webhook_deliveries
       where endpoint_id = $1 and (body::jsonb ->> 'created_at')::timestamptz >= $2`,
      [endpointId, new Date(since)],
    );
    return {
      fanOutPerSecond: rows.length / Number(span?.seconds),
      fanOut: latency(rows.map((row) => Number(row.fan_out))),
      delivery: latency(rows.map((row) => Number(row.delivery))),
    };
  } finally {
    await sql.close();
  }
}
