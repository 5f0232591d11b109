import type { Backend } from '../backends.js';
import { WARM_UP_SECONDS } from '../chat/latency.js';
import type { PgbenchWindow } from '../datapath/pgbench.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { REST_CONNECTIONS, type RestWindow } from '../realtime/rest-load.js';
import { type ContenderRounds, ratio, summarize } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import type { Latency } from '../worlds/harness.js';
import { type GroupChatResults, ONLINE, RATES, SAMPLED, SENDERS } from './chat.js';
import type { Compared, GroupsResults } from './measure.js';
import { MEMBERS, PAGE } from './seed.js';

/** bench/results/groups.md: one table per backend, each figure beside its ceiling and target. */

const ROSTER_RATIO = 0.5;
const ROSTER_P99_MS = 10;
const CHAT_P99_MS = 15;

export const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
export const lat = (l: Latency) => `p50 ${ms(l.p50)} / p99 ${ms(l.p99)} ms`;
const medianOf = (rounds: ContenderRounds<RestWindow>, figure: (w: RestWindow) => number) =>
  median(rounds.windows.map(figure));

/** The ceiling at its best: the pgbench run with the most operations per second. */
const best = (ceilings: ContenderRounds<PgbenchWindow>[]) =>
  ceilings.reduce((a, b) => (summarize(b.windows).median > summarize(a.windows).median ? b : a));

export function rows(
  label: string,
  unit: string,
  { service, ceilings }: Compared,
  target: (ratio: number, p99: number) => string,
): string[] {
  const s = summarize(service.windows);
  // The target is set against the SQL through `pg` where it ran beside pgbench.
  const throughPg = ceilings.filter((c) => c.name.startsWith('`pg`'));
  const top = best(throughPg.length > 0 ? throughPg : ceilings);
  const r = ratio(service, top);
  const pgbench = throughPg.length > 0 ? ceilings.filter((c) => !throughPg.includes(c)) : [];
  const beside =
    pgbench.length > 0 ? `; ${best(pgbench).name}: ${pct(ratio(service, best(pgbench)).ratio)}` : '';
  const errors = [service.warmUp, ...service.windows].reduce((n, w) => n + w.errors + w.non2xx, 0);
  const p99 = medianOf(service, (w) => w.p99Ms);
  return [
    `| ${label}, ${REST_CONNECTIONS} connections | **${whole(s.median)} ${unit}/s** (${whole(s.min)}–${whole(s.max)}), p50 ${ms(medianOf(service, (w) => w.p50Ms))} / p99 ${ms(p99)} ms; service ${whole(s.serverUsPerOp)} µs CPU each (${s.serverCores.toFixed(2)} cores) | ${top.name}: **${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)})${beside}; errors and non-2xx: ${errors} | ${target(r.ratio, p99)} |`,
    ...ceilings.map(
      (c) =>
        `| ceiling: ${c.name} | **${whole(summarize(c.windows).median)} ${unit}/s** (${whole(Math.min(...c.windows.map((w) => w.perSecond)))}–${whole(Math.max(...c.windows.map((w) => w.perSecond)))}), mean ${ms(median(c.windows.map((w) => w.meanMs)))} ms | | |`,
    ),
  ];
}

/** Latency over the sampled sockets, and CPU per frame delivered: each instance sends half the frames. */
function chatFigure(c: GroupChatResults): string {
  const perFrame = (((c.cores.a + c.cores.b) / 2) * 1e6) / ((c.rate * ONLINE) / 2);
  return `**${lat(c.latency)}** (max ${ms(c.latency.max)}, n = ${whole(c.latency.n)}); sender's instance ${lat(c.sameInstance)}, the other ${lat(c.otherInstance)}; send ack ${lat(c.ack)}; cores: A ${c.cores.a.toFixed(2)}, B ${c.cores.b.toFixed(2)} (${perFrame.toFixed(1)} µs per frame delivered), Postgres + Redis ${c.cores.databases.toFixed(2)}, this benchmark ${c.cores.harness.toFixed(2)}, machine ${c.cores.machine.toFixed(2)} busy`;
}

function chatChecks(c: GroupChatResults): string {
  const errors = Object.entries(c.sendErrors).map(([code, n]) => `${n} x ${code}`);
  return `${whole(c.delivered)} of ${whole(c.expected)} sampled arrivals, ${c.duplicates} twice; unsampled sockets got ${whole(c.unsampledFrames)} of ${whole(c.unsampledExpected)} frames; send errors: ${errors.join(', ') || 'none'}`;
}

function section(backend: Backend, r: GroupsResults): string {
  const roster = rows(
    `1. \`GET /api/groups/{id}/members?limit=${PAGE}\`, a random page`,
    'pages',
    r.roster,
    (ratio, p99) =>
      `≥ ${pct(ROSTER_RATIO)} of the ceiling: ${verdict(ratio >= ROSTER_RATIO)}; p99 ≤ ${ROSTER_P99_MS} ms: ${verdict(p99 <= ROSTER_P99_MS)}`,
  );
  const alone = r.rosterAlone;
  roster.splice(
    1,
    0,
    `| 1'. the same, one client, one request at a time, for \`--seconds\` | **${lat(alone)}** (max ${ms(alone.max)}, n = ${whole(alone.n)}) | ceiling: the pgbench means below | p99 ≤ ${ROSTER_P99_MS} ms: ${verdict(alone.p99 <= ROSTER_P99_MS)} |`,
  );
  const chat = (r.chat ?? []).flatMap(({ service, ceiling }) => [
    `| 2. group chat, ${ONLINE} members online (half on A, half on B), ${whole(service.rate)} \`chat.sendToGroup\`/s from ${SENDERS} of them | ${chatFigure(service)} | bare: p99 ${ms(ceiling.latency.p99)} ms, the service's **${(service.latency.p99 / ceiling.latency.p99).toFixed(1)} x**; ${chatChecks(service)} | ${service.rate === RATES[0] ? `p99 ≤ ${CHAT_P99_MS} ms: ${verdict(service.latency.p99 <= CHAT_P99_MS)}` : 'none set'} |`,
    `| ceiling: two bare uWS fan-out servers, the same load | ${chatFigure(ceiling)} | ${chatChecks(ceiling)} | |`,
  ]);
  const joins = rows(
    '3. `POST /api/groups/{id}/members` (join), a fresh user each',
    'joins',
    r.joins,
    () => 'none set',
  );
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}. Service pool ${backend === 'embedded' ? '1 (PGlite)' : '10'} connections; pgbench with ${r.pgbenchClients.join(' and ')} client(s).`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...roster,
    ...chat,
    ...joins,
    '',
  ].join('\n');
}

export function groupsReport(
  results: Partial<Record<Backend, GroupsResults>>,
  context: { command: string; environment: string; code: string; minutes: number; rounds: string },
): string {
  return [
    '# Groups: roster pages beside the SQL through `pg` and pgbench, joins beside pgbench, group chat latency across two instances',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores), so figures are noisy: compare them within a run. The load generator (autocannon, ws, msgpack) and pgbench run on the same cores as the service and the databases.',
    '',
    `- **Seed** (bench/groups/seed.ts): users, a group of ${whole(MEMBERS)} members (an owner and members who joined 1 ms apart) and two open groups for the joins, written with SQL (generate_series) before the service starts; the roster trigger keeps member_count, ANALYZE runs after. GROUP_MAX_MEMBERS is 100,000.`,
    `- **1.** autocannon, ${REST_CONNECTIONS} connections, one member's token; each request reads a random one of the ${MEMBERS / PAGE} pages by the cursor a walk of the roster got from the service (the walk checks every member comes once, in order). Ceiling: pgbench (\`-M prepared\`) running \`rosterPage\`'s SELECT (src/modules/groups/group-lists.repository.ts, copied, with its username subselect and ${PAGE + 1} rows) for a random page, its key spelled from the page number; with the service's pool size and with as many clients as autocannon has connections; on the embedded database one client, through bench/bare-pglite-socket.ts on a copy of the seeded database, a fresh server per window (its connections share one session, where a run's prepared statements would meet the next run's). The same script also runs through \`pg\` instead of libpq (bench/datapath/pg-script-run.ts: node-postgres, one connection per client, named prepared statements, every row decoded into an object as a Node service gets it), the ceiling the roster's target is set against: the target's ratio is to the faster \`pg\` run, the faster pgbench run's beside it. ${context.rounds}: the figure is the median window, the range the lowest and highest, the ratio that of the medians. pgbench gives a mean latency only. With 50 connections the p99 is mostly time in the queue (50 / throughput is the mean), so **1'** also times pages from one client, one request at a time (fetch in this process), before the rounds.`,
    `- **2.** Postgres only: two service processes sharing DATABASE_URL, REDIS_URL and DATA_DIR; ${ONLINE} members of the group, socket i on A for even i and on B for odd i, each joined with \`chat.join {group_id}\`. ${SENDERS} of them (half on each) send \`chat.sendToGroup\` frames in turn on a fixed schedule, for \`--seconds\` after ${WARM_UP_SECONDS} s at the rate that are not counted. Latency from the send to the \`chat.message\` frame on the first ${SAMPLED} sockets (the senders among them; taken on arrival, before decoding), matched by the id the ack gave; the other ${ONLINE - SAMPLED} sockets only count their frames (decoding ${ONLINE} x the rate would load this process more than the service). Ceiling: two bare uWebSockets.js servers on the same Postgres and Redis (bench/groups/bare-fanout.ts) taking the same frames: the send runs the service's insert (membership check included) and publishes on Redis, every server hands the messages to uWS's native topic publish; no token check, text filter, rate limit or recorded history. Each rate runs on the service, then on the bare servers. CPU is taken while the messages go out: the instances' cores per frame delivered count their sends too.`,
    `- **3.** autocannon, ${REST_CONNECTIONS} connections, each request a seeded user who is in no group yet, into one open group. Ceiling: pgbench running RosterService.join's transaction for an open group (bench/groups/joins.ts: advisory lock on the joiner, the group row for update, the joiner's role, the request's delete, the membership count, the insert returning the member), each a fresh user taken from a sequence before the transaction, into a group of its own; same clients and rounds as 1. The service also checks the joiner's rate limit and publishes \`group.member_joined\` (Redis on Postgres).`,
    '',
    ...(Object.entries(results) as [Backend, GroupsResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
