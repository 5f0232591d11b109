import type { Backend } from '../backends.js';
import { lat, ms } from '../groups/report.js';
import { cores, pct, verdict, whole } from '../realtime/format.js';
import { REST_CONNECTIONS, type RestWindow } from '../realtime/rest-load.js';
import { type ContenderRounds, ratio, summarize, type WindowFigures } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import type { RunContext } from '../scenario.js';
import type { Latency } from '../worlds/harness.js';
import { CONCURRENCY } from './deliveries.js';
import { EVENT_TYPE } from './events.js';
import { READS, type Read } from './inbox.js';
import { RATE } from './lag.js';
import type { WebhooksResults } from './measure.js';
import { NOTIFICATIONS, PAGE } from './seed.js';

/** bench/results/webhooks.md: one table per backend, each figure beside its ceiling and target. */

const DELIVERY_RATIO = 0.5;
const LAG_P99_MS = 200;

const READ_PATHS: Record<Read, string> = {
  list: `\`GET /api/notifications?limit=${PAGE}\``,
  count: '`GET /api/notifications/unread-count`',
};

const spread = (service: ContenderRounds<WindowFigures>, bare: ContenderRounds<WindowFigures>) => {
  const r = ratio(service, bare);
  return { r, text: `**${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)})` };
};
const rate = (rounds: ContenderRounds<WindowFigures>, unit: string) => {
  const s = summarize(rounds.windows);
  return `**${whole(s.median)} ${unit}/s** (${whole(s.min)}–${whole(s.max)})`;
};
const lagText = (l: Latency) =>
  `p50 ${ms(l.p50)} / p99 ${ms(l.p99)} ms (max ${ms(l.max)}, n = ${whole(l.n)})`;

function deliveryRows(r: WebhooksResults): string[] {
  const [service, bare] = r.deliveries as [ContenderRounds<WindowFigures>, ContenderRounds<WindowFigures>];
  const s = summarize(service.windows);
  const { r: compared, text } = spread(service, bare);
  return [
    `| 1. deliveries of the seeded backlog to the receiver, the service's job (${CONCURRENCY} attempts at once) | ${rate(service, 'deliveries')}; service ${whole(s.serverUsPerOp)} µs CPU each (${cores(s.serverCores)} cores); backlog left after the rounds: ${r.backlogLeft ? 'yes' : '**no: the figure is too low**'} | bare: ${text} | ≥ ${pct(DELIVERY_RATIO)}: ${verdict(compared.ratio >= DELIVERY_RATIO)} |`,
    `| ceiling: ${bare.name} | ${rate(bare, 'posts')}; the script ${cores(summarize(bare.windows).clientCores)} cores | | |`,
  ];
}

function lagRows(r: WebhooksResults): string[] {
  const { lag } = r;
  if (!lag) return [];
  return [
    `| 2. outbox lag at ${whole(lag.rate)} events/s for ${whole(lag.recorded / lag.rate)} s, commit to arrival (${whole(lag.recorded)} recorded in ${lag.recordSeconds.toFixed(1)} s, ${whole(lag.arrived)} arrived) | **${lagText(lag.lag)}**; the fan-out wrote ${whole(lag.fanOutPerSecond)} deliveries/s; service ${cores(lag.serviceCores)} cores | floor, bare posts at the same rate: ${lat(lag.floor)} | p99 ≤ ${LAG_P99_MS} ms: ${verdict(lag.lag.p99 <= LAG_P99_MS && lag.arrived >= lag.recorded)} |`,
    `| 2'. the same, split by the delivery rows: event to fan-out (outbox claim + fan-out) / fan-out to delivered (the delivery job) | ${lat(lag.fanOut)} / ${lat(lag.delivery)} | | |`,
  ];
}

function inboxRows(r: WebhooksResults): string[] {
  return READS.flatMap((read, i) => {
    const { alone, rounds } = r.inbox[read];
    const [service, bare] = rounds as [ContenderRounds<RestWindow>, ContenderRounds<RestWindow>];
    const s = summarize(service.windows);
    const p99 = ms(median(service.windows.map((w) => w.p99Ms)));
    const errors = [service.warmUp, ...service.windows].reduce((n, w) => n + w.errors + w.non2xx, 0);
    const n = `3${'ab'[i]}`;
    return [
      `| ${n}. ${READ_PATHS[read]}, one client, one request at a time | **${lat(alone.service)}** (max ${ms(alone.service.max)}, n = ${whole(alone.service.n)}) | bare, one client: ${lat(alone.bare)}; p99 ${pct(alone.bare.p99 / alone.service.p99)} of the service's | none set |`,
      `| ${n}'. the same, ${REST_CONNECTIONS} connections | ${rate(service, 'requests')}, p99 ${p99} ms; service ${whole(s.serverUsPerOp)} µs CPU each; errors and non-2xx: ${errors} | bare: ${spread(service, bare).text}, ${rate(bare, 'requests')}, ${whole(summarize(bare.windows).serverUsPerOp)} µs CPU each | none set |`,
    ];
  });
}

function section(backend: Backend, r: WebhooksResults): string {
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}; service pool ${backend === 'embedded' ? '1 (PGlite)' : '10'}. Seeded in ${r.seed.seconds.toFixed(1)} s: ${whole(r.seed.deliveries)} pending deliveries and ${whole(NOTIFICATIONS)} unread notifications of one user.${backend === 'embedded' ? ' No outbox lag: the embedded database lives in the service process, so the bench cannot record events in it.' : ''}`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...deliveryRows(r),
    ...lagRows(r),
    ...inboxRows(r),
    '',
  ].join('\n');
}

export function webhooksReport(
  results: Partial<Record<Backend, WebhooksResults>>,
  context: RunContext,
): string {
  return [
    '# Webhooks: deliveries/s beside a bare script, the outbox lag, and the inbox reads beside bare Fastify',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores), so figures are noisy: compare them within a run. The receiver, the load generators, the bare servers, PostgreSQL and Redis run on the same cores as the service.',
    '',
    `- **Receiver** (bench/webhooks/receiver.ts): node:http in a process of its own on 127.0.0.1, answering 204 once a body is in and stamping its arrival; the first post of each window has its signature checked. The service runs with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true.`,
    `- **1.** The database is seeded (bench/webhooks/seed.ts, the product's repositories) with pending deliveries of \`${EVENT_TYPE}\` events due at once, to an endpoint of the receiver that is disabled: this measures the delivery job alone (claim, address check, sign, post, record), not the outbox or the fan-out. A window enables the endpoint, counts arrivals for its length from the first one, and disables it. Ceiling: bench/webhooks/bare-post.ts, a process per window, ${CONCURRENCY} loops posting the same bodies (deliveryBody) signed by the service's signedHeaders over node:http with \`agent: false\`, as an attempt does, with no database. ${context.rounds}: the figure is the median window, the range the lowest and highest, the ratio that of the medians.`,
    `- **2.** (Postgres) \`${EVENT_TYPE}\` events recorded at a steady ${RATE}/s, each in a transaction of its own, through an Outbox carrying the webhooks' consumers (the service's recording path, in the bench process; the service's node claims and fans them out) to a second endpoint of the receiver, after 2 s of the same left out. Lag: the arrival minus the body's \`created_at\` (the recording transaction's now(), just before its commit). The split comes from the delivery rows (created_at: the fan-out; delivered_at: the end of the attempt). Floor: the bare script posting at the same rate, each body stamped when sent.`,
    `- **3.** A user with ${whole(NOTIFICATIONS)} unread notifications (all unread: the count's worst case); one client, one request at a time for \`--seconds\`, then autocannon, ${REST_CONNECTIONS} connections with the same token, in rounds. Ceiling: bench/webhooks/bare-inbox.ts, Fastify with no hooks, auth or schemas running the inbox repository's own functions (notificationsPage, unreadCount) for the same user through \`pg\` with the service's pool size and named statements (embedded: PGlite's \`query\` in process, on a copy of the database taken before the service started). Both answers are checked equal before either is measured.`,
    '',
    ...(Object.entries(results) as [Backend, WebhooksResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
