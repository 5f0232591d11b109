import { availableParallelism, cpus, totalmem } from 'node:os';
import { whole } from './format.js';
import type { IdleRun } from './idle-memory.js';
import { type Options, PHASE_COVERS, PHASES, USAGE } from './options.js';
import type { AtriumResults } from './phases.js';
import { memorySection } from './report-memory.js';
import { throughputSections } from './report-throughput.js';
import { type RoundSchedule, WARMUP_SECONDS } from './rounds.js';
import { SERVICE_ENV } from './servers.js';

/** bench/results/realtime.md. */

export interface Results {
  single?: AtriumResults;
  bare?: IdleRun;
  cluster?: AtriumResults;
}

export function buildReport(
  options: Options,
  seconds: number,
  schedule: RoundSchedule,
  code: string,
  { single, bare, cluster }: Results,
): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const phases = PHASES.map(
    (phase) => `- \`${phase}\`${options.phases.has(phase) ? '' : ' (not run)'}: ${PHASE_COVERS[phase]}.`,
  ).join('\n');
  const header = `# Realtime benchmark

Run ${new Date().toISOString()} on Node ${process.version}, ${availableParallelism()} cores (${cpu}),
${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM. Servers, client processes and load generators share the
machine's cores. N = ${whole(options.connections)} idle sockets per instance. Throughput: ${schedule.rounds} interleaved rounds of
${schedule.windowSeconds} s windows per server and load, after a ${WARMUP_SECONDS} s warm-up window each (see "Throughput method").
Usage: \`${USAGE}\`. Phases, run in this order, each stopping its servers before the next starts:
${phases}

${code}

Backends: "1 instance" is the laptop default, embedded PGlite in a fresh DATA_DIR and the in-process
KV store; "2 instances" share Redis (127.0.0.1:6379) and a Postgres database created for the run on
127.0.0.1:5432 (dropped afterwards; PGlite locks its data directory, so two processes cannot share
it), and one DATA_DIR for the signing key only.

Users are synthetic: their access tokens are signed by the benchmark with the service's own key
(read from DATA_DIR/keys after the service generated it) for fresh UUID v7 user and session ids that
are not in the database. The gateway and the REST hook only check the RS256 signature, the claims
and the revoked-session mark, so these authenticate like real users. But when one comes online the
presence publish looks the user up, finds no row and stops: no DB-backed presence event is built
or published, so the connect path here is cheaper than for real users by that event.

The service ran with ${Object.entries(SERVICE_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')} (the config refuses a frame limit above 100,000),
everything else at its defaults (PRESENCE_TTL_SECONDS=60, WS_IDLE_TIMEOUT_SECONDS=120). Each server
was also given \`--inspect-port\` on loopback so the benchmark can force a full GC through the
inspector (activated with SIGUSR1 only for the memory readings).
`;
  return [
    header,
    memorySection({ single: single?.idle, bare, cluster: cluster?.idle }),
    throughputSections(seconds, schedule, { single: single?.throughput, cluster: cluster?.throughput }),
  ].join('\n');
}
