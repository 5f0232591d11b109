import type { Backend } from '../backends.js';
import type { PgbenchWindow } from '../datapath/pgbench.js';
import { lat, ms, rows } from '../groups/report.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import { type ContenderRounds, ratio, summarize } from '../realtime/rounds.js';
import type { DiscoveryResults } from './measure.js';
import { LIMIT } from './search.js';
import { SNAPSHOTS, WORDS, WORLDS } from './seed.js';

/** bench/results/discovery.md: one table per backend, each figure beside its ceiling and target. */

const SEARCH_RATIO = 0.5;
const SEARCH_P99_MS = 20;
const VISIT_RATIO = 0.8;

function section(backend: Backend, r: DiscoveryResults): string {
  const searchRows = r.searches.flatMap(({ search, alone, compared }, i) => {
    const lines = rows(
      `1${String.fromCharCode(97 + i)}. \`?${search.query}&limit=${LIMIT}\``,
      'pages',
      compared,
      (ratio, p99) =>
        `≥ ${pct(SEARCH_RATIO)} of the ceiling: ${verdict(ratio >= SEARCH_RATIO)}; p99 ≤ ${SEARCH_P99_MS} ms: ${verdict(p99 <= SEARCH_P99_MS)}`,
    );
    lines.splice(
      1,
      0,
      `| the same, one client, one request at a time | **${lat(alone)}** (max ${ms(alone.max)}, n = ${whole(alone.n)}) | | p99 ≤ ${SEARCH_P99_MS} ms: ${verdict(alone.p99 <= SEARCH_P99_MS)} |`,
    );
    return lines;
  });
  const withVisit = r.joins.ceilings.filter((c) => c.name.endsWith('with the visit'));
  const without = r.joins.ceilings.filter((c) => c.name.endsWith('without it'));
  const joinRows = rows(
    '2. `POST /api/worlds/{id}/join`, one hot world, a fresh user each',
    'joins',
    { service: r.joins.service, ceilings: withVisit },
    () => 'none set',
  );
  const visitCost = withVisit.map((w, i) => {
    const other = without[i] as ContenderRounds<PgbenchWindow>;
    const v = ratio(w, other);
    const perSecond = (c: ContenderRounds<PgbenchWindow>) => whole(summarize(c.windows).median);
    return `| 2'. ${w.name.split(',')[0]}: joins with the visit / without it | **${pct(v.ratio)}** (rounds ${pct(v.perRoundMin)}–${pct(v.perRoundMax)}) | ${perSecond(w)} joins/s with, ${perSecond(other)} without | ≥ ${pct(VISIT_RATIO)}: ${verdict(v.ratio >= VISIT_RATIO)} |`;
  });
  const s = r.seed;
  const jobs = [
    ...s.foldMs.map(
      (f) =>
        `| 3. fold of ${whole(f.visits)} pending visits (of 1,000 worlds), DiscoveryJobs.fold | **${whole(f.ms)} ms** | every DISCOVERY_FOLD_INTERVAL_SECONDS (5) | none set |`,
    ),
    `| 4. ranking snapshot of ${whole(WORLDS)} public worlds, DiscoveryJobs.rank (${SNAPSHOTS} times) | **${s.snapshotMs.map((x) => whole(x)).join(', ')} ms** | every DISCOVERY_RANK_INTERVAL_SECONDS (60) | none set |`,
  ];
  const plans = r.plans
    ? [
        `EXPLAIN (ANALYZE, BUFFERS) of the search with the highest one-client p99 (${r.plans.slowest}), its first page, after the rounds:`,
        '',
        '```',
        r.plans.search,
        '```',
        '',
        `EXPLAIN (ANALYZE, BUFFERS) of the join's reservation (reserveRoomiest) on the hot world after the joins, rolled back; ${whole(r.plans.liveReservations)} live reservations on its server then:`,
        '',
        '```',
        r.plans.reserve,
        '```',
        '',
      ]
    : [];
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}. Service pool ${backend === 'embedded' ? '1 (PGlite)' : '10'} connections; pgbench with ${r.pgbenchClients.join(' and ')} client(s). "${s.word}" is in ${whole(s.wordMatches)} of the ${whole(WORLDS)} public worlds, ${s.tag} on ${whole(s.tagMatches)}.`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...searchRows,
    ...joinRows,
    ...visitCost,
    ...jobs,
    '',
    ...plans,
  ].join('\n');
}

export function discoveryReport(
  results: Partial<Record<Backend, DiscoveryResults>>,
  context: { command: string; environment: string; code: string; minutes: number; rounds: string },
): string {
  return [
    '# Discovery: search pages of 100,000 public worlds beside their SQL through `pg` and pgbench, joins of a hot world beside pgbench',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores), so figures are noisy: compare them within a run. The load generator (autocannon) and pgbench run on the same cores as the service and the database.',
    '',
    `- **Seed** (bench/discovery/seed.ts): ${whole(WORLDS)} public worlds of 10 owners, created over the last year, each with a discovery row as its owner's PUT leaves it: a title of 3 and a description of 15 words from ${WORDS.length}, 1-5 of 200 tags, one of the 9 categories, words and tags skewed (index = size x r²) so a common one matches a realistic fraction; hourly visit buckets (8 random hours in the last 192, visits skewed) for one world in five. Written with SQL before the service starts, from hashes of the world's number (the same data every run); then the timed folds and ranking snapshots (the product's DiscoveryJobs on the seeded database: **3**, **4**), and ANALYZE. The service runs with DISCOVERY_RANK_INTERVAL_SECONDS 3600, so no snapshot lands in a window (the seed's is the one ranked), and the fold every 5 s as configured.`,
    `- **1.** autocannon, ${REST_CONNECTIONS} connections, one user's token, the first page (limit ${LIMIT}) of each search. Ceiling: pgbench (\`-M prepared\`) running the statements the service runs for that page (bench/discovery/search.ts, copied from discovery-search.repository.ts: newestPage's SELECT for \`new\`; latestSnapshot's SELECT then rankedPage's for popular and trending, the filters as filtersOf writes them, ${LIMIT + 1} rows, the first page's null keys bound as null parameters); with the service's pool size and with as many clients as autocannon has connections; on the embedded database one client through bench/bare-pglite-socket.ts on a copy of the seeded database, a fresh server per window; the same statements also run through \`pg\` instead of libpq (bench/datapath/pg-script-run.ts: node-postgres, one connection per client, named prepared statements, every row decoded into an object as a Node service gets it), which is what the target is set against: the ratio is to the faster \`pg\` run, the faster pgbench run's beside it. ${context.rounds}: the figure is the median window, the range the lowest and highest, the ratio that of the medians. pgbench gives a mean latency only. With 50 connections the p99 is mostly the queue (50 / throughput is the mean), so the row under each times pages from one client, one request at a time, for half of \`--seconds\`, before the rounds.`,
    `- **2.** autocannon, ${REST_CONNECTIONS} connections, each request a seeded user who never joined, into one public world with one ready game server (a seeded row: a join only reads and reserves it, no process is involved). Every join takes the world's join lock, reserves a place and records a visit. Ceiling: pgbench running that transaction (bench/discovery/joins.ts: the join lock, failOverdue, extendReservation, startingServer, reserveRoomiest and recordVisit's statement, copied), each a fresh user from a sequence read before it, on a world and server of its own; and the same without recordVisit's statement on a third (**2'**: what the visit costs a join). Same clients and rounds as 1. The service also reads the world (readable) before its transaction. Reservations live 60 s and each join counts its server's live ones, so a contender's joins slow as its reservations pile up (see the plan below).`,
    '',
    ...(Object.entries(results) as [Backend, DiscoveryResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
