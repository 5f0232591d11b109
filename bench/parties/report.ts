import type { Backend } from '../backends.js';
import { WARM_UP_SECONDS } from '../chat/latency.js';
import { lat, ms, rows } from '../groups/report.js';
import { whole } from '../realtime/format.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import type { RunContext } from '../scenario.js';
import { CHANGES_PER_SECOND, type FanoutResults } from './fanout.js';
import type { PartiesResults } from './measure.js';
import type { PlacementResults } from './placement.js';
import { FANOUT_PARTIES, JOIN_PARTIES, JOINERS, PLACEMENT_PARTIES, PLAIN_JOINERS, SEATED } from './seed.js';

/** bench/results/parties.md: one table per backend, each figure beside its ceiling or reference. */

function fanoutRow(f: FanoutResults, oneInstance: FanoutResults | undefined): string {
  const where = f.instances === 1 ? 'one instance' : `${f.instances} instances (members alternately on each)`;
  const split =
    f.instances === 1
      ? ''
      : `; the mover's instance ${lat(f.sameInstance)}, the other ${lat(f.otherInstance)}`;
  const beside =
    oneInstance && oneInstance !== f
      ? `one instance: p99 ${ms(oneInstance.latency.p99)} ms, this **${(f.latency.p99 / oneInstance.latency.p99).toFixed(1)} x**; `
      : '';
  return `| 2. \`party.updated\` to the 7 other members' sockets, ${FANOUT_PARTIES} parties, ${where}, ${FANOUT_PARTIES * CHANGES_PER_SECOND} joins and leaves/s | **${lat(f.latency)}** (max ${ms(f.latency.max)}, n = ${whole(f.latency.n)})${split} | ${beside}the request's own answer ${lat(f.request)}; ${whole(f.delivered)} of ${whole(f.expected)} arrivals, ${f.strays} stray or twice; request errors: ${f.requestErrors} | none set |`;
}

function placementRow(p: PlacementResults): string {
  return `| 3. party join placement of 8 members, one client, one request at a time, interleaved with plain joins | **${lat(p.party)}** (max ${ms(p.party.max)}, n = ${whole(p.party.n)}) | a plain join of the same loop ${lat(p.plain)} (max ${ms(p.plain.max)}, n = ${whole(p.plain.n)}): the placement's p99 **${(p.party.p99 / p.plain.p99).toFixed(1)} x**; non-200 answers: ${p.errors} | none set |`;
}

function section(backend: Backend, r: PartiesResults): string {
  const cycles = rows(
    `1. \`POST …/join\` then \`POST …/leave\`, one cycle`,
    'cycles',
    r.cycles,
    () => 'none set',
  );
  cycles.splice(
    1,
    0,
    `| 1'. the same, one client, one request at a time, for \`--seconds\` | join **${lat(r.alone.join)}** (max ${ms(r.alone.join.max)}, n = ${whole(r.alone.join.n)}); leave **${lat(r.alone.leave)}** (max ${ms(r.alone.leave.max)}) | ceiling: the pgbench means below, each a whole cycle (both transactions) among its clients | none set |`,
  );
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}. Service pool ${backend === 'embedded' ? '1 (PGlite)' : '10'} connections; pgbench with ${r.pgbenchClients.join(' and ')} client(s).`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    ...cycles,
    ...r.fanout.map((f) => fanoutRow(f, r.fanout[0])),
    ...(r.placement ? [placementRow(r.placement)] : []),
    '',
  ].join('\n');
}

export function partiesReport(
  results: Partial<Record<Backend, PartiesResults>>,
  context: RunContext,
): string {
  return [
    "# Parties: joins and leaves beside pgbench, `party.updated` to the members' sockets on one and two instances, a party's placement on a game server",
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores), so figures are noisy: compare them within a run. The load generator (autocannon, fetch, ws, msgpack) and pgbench run on the same cores as the service and the databases.',
    '',
    `- **Seed** (bench/parties/seed.ts): users (bench/datapath/seed.ts) and open parties of \`max_size\` 8 written before the service starts through the parties repository (insertParty, insertMember) in one transaction: ${JOIN_PARTIES} of ${SEATED} members for the service's joins, as many for the ceiling's, ${FANOUT_PARTIES} of 7 for 2. PARTY_OFFLINE_GRACE_SECONDS is a day: the seeded members hold no socket, and the offline sweep (which still runs every second on each instance) would remove them a minute in.`,
    `- **1.** autocannon, ${REST_CONNECTIONS} connections, each repeating a join then a leave of an open party (bench/parties/joins.ts); each cycle takes one of ${JOINERS} joiners and one of the ${JOIN_PARTIES} parties from free lists and gives them back once the leave is answered, so a joiner is in one party at a time and a party has one joiner at a time (always room). The figure is cycles/s (two requests each); the latencies are autocannon's over both requests. Ceiling: pgbench (\`-M prepared\`) running the transactions PartiesService.join and .leave run (bench/parties/ceiling.ts: the user's advisory lock, the party row for update, the join's facts, the member's insert, the roster; then the row lock, the delete, the remaining members, the roster), the statements being the repository's own exported texts with their parameters written in as SQL; client c is one user joining and leaving its own parties; with the service's pool size and with as many clients as autocannon has connections; on the embedded database one client, through bench/bare-pglite-socket.ts on a copy of the seeded database, a fresh server per window. ${context.rounds}: the figure is the median window, the range the lowest and highest, the ratio that of the medians. The service also validates the token and publishes \`party.updated\` to every member (through Redis on Postgres); pgbench gives a mean latency only. **1'** times each request from one client, one at a time (fetch in this process), before the rounds.`,
    `- **3.** (Postgres + Redis) a party's placement on one game server beside a plain join, from one client, one request at a time, the two interleaved in one loop for \`--seconds\` after ${WARM_UP_SECONDS} s not counted (bench/parties/placement.ts): the leader of one of ${PLACEMENT_PARTIES} parties of 8 (its 7 members online through REST heartbeats) sends \`POST /api/worlds/{world_id}/join {party: true}\`, then one of ${PLAIN_JOINERS} users in no party \`POST …/join {}\`. Two public worlds with one ready server each, local processes of the fake game server the tests use (test/gameservers/fixtures, the silent one: it reports ready and no players); each party and each joiner goes to the other world than its last time, so a placement moves 8 reservations (locks them, places them in one statement, records their follows and 8 visits, then sends \`party.follow\` to 7) and a plain join moves one. The reference is the plain join of the same loop: the figure is the placement's p99 over the plain join's.`,
    `- **2.** ${FANOUT_PARTIES} parties of 7 members and a mover, each of the 8 holding a socket (member k on instance k mod the instances; the mover's socket and REST requests on the first). The movers join, leave, join … at ${CHANGES_PER_SECOND} changes/s each, the parties' turns spread evenly, for \`--seconds\` after ${WARM_UP_SECONDS} s not counted; a change waits for the last arrival of the one before. Latency from the request's start to the \`party.updated\` frame on each of the 7 other members' sockets (taken on arrival, before decoding), the event told by whether the mover is among its members. On Postgres + Redis also with a second service process on the same Postgres, Redis and DATA_DIR, the members' sockets alternately on each. No bare ceiling: the reference is the same run's request answer and one instance's figure.`,
    '',
    ...(Object.entries(results) as [Backend, PartiesResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
