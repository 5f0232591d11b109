import type { Backend } from '../backends.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { type ContenderRounds, ratio, summarize, type WindowFigures } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import type { Latency } from '../worlds/harness.js';
import { type HistoryResults, PAGE, type WithDatabaseCpu } from './history.js';
import { RATES, SENDERS, WARM_UP_SECONDS } from './latency.js';
import { type ChatResults, USERS } from './measure.js';
import { MISSED, REPETITIONS } from './recovery.js';

/** bench/results/chat.md: one table per backend, each figure beside its target. */

const LATENCY_P99_MS = 15;
const CEILING_RATIO = 0.5;
const HISTORY_CEILING_RATIO = 0.7;

const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
const lat = (l: Latency) => `p50 ${ms(l.p50)} / p99 ${ms(l.p99)} ms (max ${ms(l.max)}, n = ${whole(l.n)})`;
const errorText = (errors: Record<string, number>) =>
  Object.entries(errors)
    .map(([code, n]) => `${n} x ${code}`)
    .join(', ') || 'none';

type Window = WindowFigures & { p50Ms?: number; p99Ms?: number; meanMs?: number };

function rate(rounds: ContenderRounds<Window>): string {
  const s = summarize(rounds.windows);
  const p50 = median(rounds.windows.map((w) => w.p50Ms ?? Number.NaN));
  const p99 = median(rounds.windows.map((w) => w.p99Ms ?? Number.NaN));
  const latencies = Number.isNaN(p50)
    ? `mean ${ms(median(rounds.windows.map((w) => w.meanMs ?? Number.NaN)))} ms`
    : `p50 ${ms(p50)} / p99 ${ms(p99)} ms`;
  const cpu = Number.isNaN(s.serverUsPerOp)
    ? ''
    : `; service ${whole(s.serverUsPerOp)} µs CPU/msg (${s.serverCores.toFixed(2)} cores), machine ${s.machineCores.toFixed(2)} busy`;
  return `**${whole(s.median)} msgs/s** (${whole(s.min)}–${whole(s.max)}), ${latencies}${cpu}`;
}

function sendRow(
  name: string,
  subject: ContenderRounds<Window>,
  ceiling: ContenderRounds<Window>,
  errors: string,
) {
  const r = ratio(subject, ceiling);
  return `| ${name} | ${rate(subject)} | ceiling: **${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)}); errors: ${errors} | ≥ ${pct(CEILING_RATIO)} of the ceiling: ${verdict(r.ratio >= CEILING_RATIO)} |`;
}

/** µs of CPU per page: the service's (when measured) plus Postgres' and Redis'. */
function cpuPerPage(rounds: ContenderRounds<WithDatabaseCpu<Window>>): string {
  const perPage = (cores: (w: WithDatabaseCpu<Window>) => number) =>
    median(rounds.windows.map((w) => (cores(w) * 1e6) / w.perSecond));
  const database = perPage((w) => w.databaseCores);
  const service = perPage((w) => w.serverCores);
  if (Number.isNaN(service)) return `Postgres + Redis ${whole(database)} µs CPU/page`;
  const total = perPage((w) => w.serverCores + w.databaseCores);
  return `${whole(total)} µs CPU/page (service ${whole(service)}, Postgres + Redis ${whole(database)})`;
}

function historyRows({ rest, ceiling, bare }: HistoryResults, poolSize: number): string[] {
  const r = ratio(rest, ceiling);
  const toBare = ratio(rest, bare);
  const s = summarize(rest.windows);
  const p99 = median(rest.windows.map((w) => w.p99Ms));
  return [
    `| 4a. \`GET /api/chat/dm/{user_id}/messages?limit=${PAGE}\`, 50 connections | **${whole(s.median)} pages/s** (${whole(s.min)}–${whole(s.max)}), p99 ${ms(p99)} ms; ${cpuPerPage(rest)} | ceiling: **${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)}); errors: ${[rest.warmUp, ...rest.windows].reduce((sum, w) => sum + w.errors + w.non2xx, 0)} | ≥ ${pct(HISTORY_CEILING_RATIO)} of the ceiling: ${verdict(r.ratio >= HISTORY_CEILING_RATIO)} |`,
    `| 4b. ceiling: pgbench, ${poolSize} connections, the page's SELECT | **${whole(summarize(ceiling.windows).median)} pages/s**; ${cpuPerPage(ceiling)} | | |`,
    `| 4c. ceiling: bare Fastify + \`pg\` (${poolSize} connections) serving the page's SELECT as JSON, 50 connections | **${whole(summarize(bare.windows).median)} pages/s**; ${cpuPerPage(bare)} | 4a is **${pct(toBare.ratio)}** of it (rounds ${pct(toBare.perRoundMin)}–${pct(toBare.perRoundMax)}) | |`,
  ];
}

function section(backend: Backend, r: ChatResults, poolSize: number): string {
  const rows: string[] = [];
  for (const l of r.latency ?? []) {
    rows.push(
      `| 1. DM end to end, ${SENDERS} senders on A to ${SENDERS} recipients on B, ${whole(l.rate)}/s | **${lat(l.latency)}** | ${whole(l.delivered)} of ${whole(l.expected)} delivered, ${l.duplicates} twice, send errors: ${errorText(l.sendErrors)}; send ack p50 ${ms(l.ack.p50)} / p99 ${ms(l.ack.p99)} ms | p99 ≤ ${LATENCY_P99_MS} ms: ${verdict(l.latency.p99 <= LATENCY_P99_MS)} |`,
    );
  }
  if (r.throughput) {
    const { socket, rest, ceiling, messagesPerStatement } = r.throughput;
    const frameErrors: Record<string, number> = {};
    for (const w of [socket.warmUp, ...socket.windows])
      for (const [code, n] of Object.entries(w.errors)) frameErrors[code] = (frameErrors[code] ?? 0) + n;
    const restErrors = [rest.warmUp, ...rest.windows].reduce((sum, w) => sum + w.errors + w.non2xx, 0);
    rows.push(
      sendRow(
        `2a. \`dm.send\` frames, ${USERS} sockets x 1 in flight`,
        socket,
        ceiling,
        errorText(frameErrors),
      ),
      sendRow(
        '2b. `POST /api/chat/dm/{user_id}/messages`, 50 connections',
        rest,
        ceiling,
        `${restErrors} (connection errors, timeouts, non-2xx)`,
      ),
      `| 2c. ceiling: pgbench, ${poolSize} connections, the single-message statement per message | ${rate(ceiling)} | the service stored ${messagesPerStatement.toFixed(1)} messages per statement over 2a and 2b | |`,
    );
  }
  if (r.history) rows.push(...historyRows(r.history, poolSize));
  const rec = r.recovery.ms;
  rows.push(
    `| 3. recovery of ${whole(MISSED)} missed DMs, auth frame to ack, ${rec.length} times | **median ${ms(median(rec))} / max ${ms(Math.max(...rec))} ms** | each: ${rec.map(ms).join(', ')} ms | none set |`,
  );
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    ...(r.database ? [`Database: ${r.database}. Service pool ${poolSize} connections.`, ''] : []),
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Problems found while checking the recovered events: ${r.recovery.problems.join('; ') || 'none'}.`,
    '',
  ].join('\n');
}

export function chatReport(
  results: Partial<Record<Backend, ChatResults>>,
  context: {
    command: string;
    environment: string;
    code: string;
    minutes: number;
    rounds: string;
    poolSize: number;
  },
): string {
  return [
    '# Direct messages: cross-instance latency, send throughput and history pages beside pgbench, missed-event recovery',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores; other test runs may have been going on), so figures are noisy: compare them within a run, not across runs. The load generator (ws, autocannon, msgpack decoding) and pgbench run on the same cores as the service and the databases, and the benchmark’s own time is inside every latency.',
    '',
    `- **1.** Two service processes sharing DATABASE_URL, REDIS_URL and DATA_DIR. ${SENDERS} users with a socket on A each write to a user of their own with a socket on B; \`dm.send\` frames go out on a fixed schedule of ${RATES.map(whole).join(' and then ')}/s in all, for \`--seconds\` each, after one message per pair, which creates the conversations, and ${WARM_UP_SECONDS} s at the rate that are not counted (before the hot path is compiled and the pool has grown, every message is slower; send errors include them). Latency from the send to the recipient's \`dm.message\` frame, matched by message id (same process, same clock; taken on arrival, before decoding).`,
    `- **2.** ${USERS} seeded users, user i writing to user i + 1 (the last to the first). Socket: one socket per user, one \`dm.send\` in flight each (bench/realtime/frame-load.ts); REST: autocannon, 50 connections, each request from a random user to their peer. Ceiling: pgbench with the service's pool size (DATABASE_POOL_SIZE), \`-M prepared\`, running per message the statement \`ChatService.send\` runs for a lone message (bench/chat/ceiling.ts): \`insertMessage\`, which reads the friendship, the blocks either way and the peer's dm_policy, and updates the conversation's activity (guarded by its \`blocked\` marker and the policy) and inserts the message, in one statement without a transaction (the socket phase, which runs first, made every pair's conversation), for a random user and their peer; ids are spelled from numbers in SQL, new ids come from \`gen_random_uuid()\`. The service also checks its rate limit and publishes the event to both users' streams (Redis), which the ceiling does not; and while two statements are storing messages (statementsAtOnce), the sends that arrive meanwhile wait and the next statement stores them all (\`insertMessages\`, docs/chat.md), so under load it runs fewer statements than messages (2c gives how many per statement). ${context.rounds} (bench/realtime/rounds.ts): the figure is the median window, the range the lowest and highest, the ratio that of the medians with the per-round ratios beside it. CPU per message is the service process's (Postgres and Redis not included); n/a for pgbench, whose work is in Postgres' backends.`,
    `- **3.** A user's socket closes at the position of its last auth ack; another user sends it ${whole(MISSED)} DMs over REST (${whole(MISSED)} events of its stream; EVENT_HISTORY_SIZE is 1000); a new socket then authenticates with \`recover\` at that position. Timed from sending the auth frame (the socket already open) to its ack; checked: \`recovered: true\`, exactly ${whole(MISSED)} \`dm.message\` frames before the ack, the messages the REST calls answered, each once, offsets rising in the same epoch, the ack's position the last one. ${REPETITIONS} repetitions, each starting from the previous ack's position.`,
    `- **4.** The conversations of 2 (user i and user i + 1, full of user i's messages by then). REST: autocannon, 50 connections, each request a random user reading the first page (${PAGE} messages) of the conversation with their peer: one statement finds the conversation, moves the reader's read mark when a peer message is newer than it (never here: the peer wrote nothing) and reads the page (\`readHistory\`, src/modules/chat/dm-reads.repository.ts). Ceiling: pgbench with the service's pool size, \`-M prepared\`, running the page's SELECT (\`historyPageSql\`, ${PAGE + 1} rows as the service reads them to know whether a next page exists) for the conversation of a random user and their peer, looked up by the pair as the service does. A second ceiling (4c, bench/chat/bare-history.ts): bare Fastify 5 (no logger, hooks, plugins, auth or validation) running that SELECT through \`pg\` with the same pool size and named statements, and answering the same JSON; autocannon as for 4a, without a token. CPU per page adds the cores Postgres (its backends, and exited ones through the postmaster's children times) and Redis used during each window to the service's; pgbench's own client CPU is not counted. Same rounds as 2.`,
    '',
    ...(Object.entries(results) as [Backend, ChatResults][]).map(([backend, r]) =>
      section(backend, r, context.poolSize),
    ),
  ].join('\n');
}
