import type { Backend } from '../backends.js';
import type { Compared } from '../groups/measure.js';
import { lat, ms } from '../groups/report.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import { ratio, summarize } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import type { RunContext } from '../scenario.js';
import { type LeaderboardsResults, PAGES, SUBMITTERS } from './measure.js';
import type { Page } from './requests.js';
import { LIMIT } from './seed.js';

/** bench/results/leaderboards.md: one table per backend, each figure beside its ceiling and target. */

const CEILING_RATIO = 0.5;
const ALONE_P99_MS = 10;

const PATHS: Record<Page, string> = {
  top: `\`GET /api/leaderboards/bench/records?limit=${LIMIT}\` (top page)`,
  around: `\`GET …/records?around=me&limit=${LIMIT}\` as the user ranked in the middle`,
};

/** The REST load's row and, on Postgres + Redis, the bare script's under it. */
function loadRows(label: string, unit: string, { service, ceilings }: Compared): string[] {
  const s = summarize(service.windows);
  const errors = [service.warmUp, ...service.windows].reduce((n, w) => n + w.errors + w.non2xx, 0);
  const p = (figure: (w: (typeof service.windows)[number]) => number) =>
    ms(median(service.windows.map(figure)));
  const figure = `**${whole(s.median)} ${unit}/s** (${whole(s.min)}–${whole(s.max)}), p50 ${p((w) => w.p50Ms)} / p99 ${p((w) => w.p99Ms)} ms; service ${whole(s.serverUsPerOp)} µs CPU each (${s.serverCores.toFixed(2)} cores); errors and non-2xx: ${errors}`;
  if (ceilings.length === 0)
    return [`| ${label}, ${REST_CONNECTIONS} connections | ${figure} | no ceiling | none set |`];
  const rows = [`| ${label}, ${REST_CONNECTIONS} connections | ${figure} | | |`];
  for (const bare of ceilings) {
    const r = ratio(service, bare);
    const b = summarize(bare.windows);
    const cores = Number.isNaN(b.serverCores)
      ? `the script ${b.clientCores.toFixed(2)} cores`
      : `${whole(b.serverUsPerOp)} µs CPU each (${b.serverCores.toFixed(2)} cores)`;
    rows.push(
      `| ceiling: ${bare.name} | **${whole(b.median)} ${unit}/s** (${whole(b.min)}–${whole(b.max)}), mean ${ms(median(bare.windows.map((w) => w.meanMs)))} ms; ${cores} | the service: **${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)}) | ≥ ${pct(CEILING_RATIO)}: ${verdict(r.ratio >= CEILING_RATIO)} |`,
    );
  }
  return rows;
}

function section(backend: Backend, r: LeaderboardsResults): string {
  const { seed, rebuilt, after } = r;
  const pageRows = PAGES.flatMap((page, i) => {
    const n = `${i + 1}`;
    const { service, bare, bareHttp } = r.alone[page];
    const floors = [
      bare && `bare loops, one client: ${lat(bare)} (max ${ms(bare.max)})`,
      bareHttp && `bare Fastify over HTTP, one client: ${lat(bareHttp)} (max ${ms(bareHttp.max)})`,
    ];
    const floor = floors.filter(Boolean).join('; ');
    return [
      `| ${n}a. ${PATHS[page]}, one client, one request at a time | **${lat(service)}** (max ${ms(service.max)}, n = ${whole(service.n)}) | ${floor} | p99 ≤ ${ALONE_P99_MS} ms: ${verdict(service.p99 <= ALONE_P99_MS)} |`,
      ...loadRows(`${n}b. the same`, 'pages', r.pages[page]),
    ];
  });
  const first = PAGES.map((page) => {
    const read = r.firstReads[page];
    return `${page === 'top' ? 'the top page' : 'the around-me page'} ${read.status}${read.status === 200 ? (read.exact ? ', exact' : ', **not exact**') : ''} in ${whole(read.ms)} ms`;
  }).join(', ');
  const checks = after
    ? `After the submissions: the top page ${after.topExact ? 'is' : '**is not**'} SQL's top ${LIMIT} (${verdict(after.topExact)}); the index holds ${whole(after.members)} members for ${whole(after.records)} records (${verdict(after.members === after.records)}).`
    : "The embedded KV is the service's memory: nothing is checked after the submissions from outside.";
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}; service pool ${backend === 'embedded' ? '1 (PGlite)' : '10'}. **${whole(seed.records)} records** in one board (users ${seed.seconds.users.toFixed(1)} s and records ${seed.seconds.records.toFixed(1)} s to seed). The first reads after the start, answered by SQL (no index yet): ${first}. The rank index they started was rebuilt from **${whole(rebuilt.records)} records in ${(rebuilt.ms / 1000).toFixed(1)} s**; both pages were exact again from it. ${checks}`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...pageRows,
    ...loadRows(
      `3. \`POST /api/leaderboards/bench/records {score}\`, a random one of ${whole(SUBMITTERS)} users`,
      'submissions',
      r.submissions,
    ),
    '',
  ].join('\n');
}

export function leaderboardsReport(
  results: Partial<Record<Backend, LeaderboardsResults>>,
  context: RunContext,
): string {
  return [
    '# Leaderboards: pages of a board of 1,000,000 records and submissions, beside bare Redis + `pg` ceilings',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores), so figures are noisy: compare them within a run. The load generator (autocannon), the bare script, PostgreSQL and Redis run on the same cores as the service.',
    '',
    `- **Seed** (bench/leaderboards/seed.ts): users numbered from 1 and a \`desc\` / \`best\` board (the product's insertBoard), with one record per user in its one period as a first submission leaves it, scores a hash of the user's number; written with SQL before the service starts, then VACUUM ANALYZE (the visibility map for index-only scans, and no autovacuum of the fresh rows during the windows). The rank index is not seeded: the service's first reads find no ready marker, answer from SQL (each read once, timed, and checked if it answered) and rebuild it (RankIndex.load); the bench waits for its \`rank index rebuilt\` log line. Every page is then checked before it is measured: its user ids and ranks must be SQL's, read at seed time.`,
    `- **1, 2.** One client, one request at a time for \`--seconds\` over one kept-alive node:http connection, taking turns of a second with bare Fastify serving the same work, after an untimed second each (**a**; beside it those turns' figures and the bare script's same work with one client and no HTTP, the floor of this machine); then autocannon, ${REST_CONNECTIONS} connections with the same token (**b**). ${context.rounds}: the figure is the median window, the range the lowest and highest, the ratio that of the medians. With ${REST_CONNECTIONS} connections the p99 is mostly the queue.`,
    `- **3.** autocannon, ${REST_CONNECTIONS} connections, each request a random one of users 1–${whole(SUBMITTERS)} (LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT raised so the limit never refuses): half the scores beat the user's best (the record, its version and its index member change), half do not (only num_submissions does), bench/leaderboards/scores.ts.`,
    `- **Ceiling** (Postgres + Redis only): bench/leaderboards/bare.ts, a process per window, ${REST_CONNECTIONS} concurrent loops over \`pg\` with the service's pool size (named prepared statements) and one auto-pipelined ioredis connection, doing the pages' Redis and SQL work with nothing around it (no HTTP, auth, board lookup or ready check): top, ZRANGE then the first member's ZLEXCOUNT beside the page's SELECT; around, the user's member (from the index's hash of versions), ZCARD, ZLEXCOUNT and ZRANGE in one script call (the service's Kv.zwindowOfField), then the page's SELECT; both on the service's own index and rows. Submissions: the service's \`best\` upsert, then ZADD and ZLEXCOUNT in one round trip, on a copy of the board (its own records and a COPY of the index), so that it never touches the rows behind the service's index. The embedded backend has no ceiling: its KV lives in the service's process.`,
    `- **The same ceiling over HTTP**: bench/leaderboards/bare.ts serving that work from bare Fastify (no logger, hooks or plugins) under the same autocannon load as the service (pages as GET, submissions as POST {score} of a random submitter named in a header), answering the service's JSON fields. It does the same work as the service but for auth, validation, the board lookup, the rate limit and the ready check; the loops above do less than the service (no HTTP request to parse and answer, no load generator on the cores). Its CPU per operation is the bare server's.`,
    '',
    ...(Object.entries(results) as [Backend, LeaderboardsResults][]).map(([backend, r]) =>
      section(backend, r),
    ),
  ].join('\n');
}
