import type { Backend } from '../backends.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { median } from '../realtime/stats.js';
import { BATCH_WRITES } from './batch-write.js';
import { BULK_CHUNK_BYTES, BULK_CHUNKS, CEILING_SQL } from './bulk-load.js';
import { COEDIT_BYTES, type CoEditResults, PUTS_PER_SECOND, SUBSCRIBERS } from './co-editing.js';
import type { Latency } from './harness.js';
import { HISTORY_REVISIONS } from './history.js';
import { BATCHES, BULK_REPS, type WorldsResults } from './measure.js';
import { EDITORS, PUT_BYTES, type PutResults } from './put-throughput.js';

/** bench/results/worlds.md: one table per backend, each figure beside its target. */

const LOAD_RATIO_TARGET = 0.5;
const COEDIT_P99_MS = 20;
const HISTORY_P99_MS = 10;

const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
const lat = (l: Latency) => `p50 ${ms(l.p50)} / p99 ${ms(l.p99)} ms (max ${ms(l.max)}, n = ${whole(l.n)})`;
const mbs = (runs: number[]) =>
  `**${median(runs).toFixed(1)} MB/s** (${Math.min(...runs).toFixed(1)}–${Math.max(...runs).toFixed(1)})`;
const p99Verdict = (l: Latency, limit: number) => `p99 ≤ ${limit} ms: ${verdict(l.p99 <= limit)}`;

function loadRow(name: string, runs: number[], ceiling: number[]): string {
  const ratio = median(runs) / median(ceiling);
  return `| ${name} | ${mbs(runs)} | ceiling ${median(ceiling).toFixed(1)} MB/s: **${pct(ratio)}** | ≥ ${pct(LOAD_RATIO_TARGET)} of the ceiling: ${verdict(ratio >= LOAD_RATIO_TARGET)} |`;
}

const errorText = (errors: Record<string, number>) =>
  Object.entries(errors)
    .map(([status, n]) => `${n} x ${status}`)
    .join(', ') || 'none';

function putRow(name: string, r: PutResults, note: string): string {
  const { serverCores, clientCores, machineCores } = r.cpu;
  const cpu = `service ${whole((serverCores * 1e6) / r.writesPerSecond)} µs CPU/write (${serverCores.toFixed(2)} cores), benchmark ${clientCores.toFixed(2)}, machine ${machineCores.toFixed(2)} busy`;
  return `| ${name} | **${whole(r.writesPerSecond)} writes/s**, ${lat(r.latency)} | ${note}; ${cpu}; errors: ${errorText(r.errors)} | none set |`;
}

function coEditRow(name: string, r: CoEditResults): string {
  return `| ${name} | **${lat(r.latency)}** | put ack (the commit) p50 ${ms(r.ack.p50)} / p99 ${ms(r.ack.p99)} ms; ${whole(r.delivered)} of ${whole(r.expected)} deliveries, ${r.resyncs} resyncs, ${r.putErrors} refused puts | ${p99Verdict(r.latency, COEDIT_P99_MS)} |`;
}

function section(backend: Backend, r: WorldsResults): string {
  const seed = r.historySeed;
  const size = `${whole(seed.revisions)} revisions`;
  const problems = [...r.bulk.problems, ...r.history.problems];
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite in the service process, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis 127.0.0.1:6379'}`,
    '',
    `Database: ${r.database}. History seeded with SQL in ${seed.seconds.toFixed(1)} s (${size}${seed.cut ? `: stopped early, ${seed.cut}` : ''}).`,
    '',
    '| measurement | figure | compared with | target |',
    '|---|---|---|---|',
    loadRow('1a. room content, REST `GET …/content` (msgpack, whole body read)', r.bulk.rest, r.bulk.ceiling),
    loadRow('1b. room content, socket `chunks.load` (pages until the ack)', r.bulk.socket, r.bulk.ceiling),
    `| 1c. ceiling: the plain SQL join, same database | ${mbs(r.bulk.ceiling)} | | |`,
    `| 2. \`POST …/chunks/batch\`, ${BATCH_WRITES} new 16 KiB chunks, one at a time | **${lat(r.batch.latency)}** | ${r.batch.mbPerSecond.toFixed(1)} MB/s of payload back to back | none set |`,
    putRow(
      `3a. \`PUT …/chunks/{x}/{y}/{z}\` ${PUT_BYTES} B, ${EDITORS} editors, 10 rooms of 1 world`,
      r.putsRooms,
      'one world lock',
    ),
    putRow(
      `3b. same, ${EDITORS} editors over 10 worlds (1 room each)`,
      r.putsWorlds,
      `**${(r.putsWorlds.writesPerSecond / r.putsRooms.writesPerSecond).toFixed(2)}x** the one-world figure`,
    ),
    ...(r.coEditCross
      ? [coEditRow(`4a. co-editing, editor on A, ${SUBSCRIBERS} subscribers on B`, r.coEditCross)]
      : []),
    coEditRow(
      `4${r.coEditCross ? 'b' : ''}. co-editing, editor and ${SUBSCRIBERS} subscribers on one instance`,
      r.coEditSame,
    ),
    `| 5a. history, newest page, \`limit=50\`, ${size} | **${lat(r.history.firstPage)}** | | ${p99Verdict(r.history.firstPage, HISTORY_P99_MS)} |`,
    `| 5b. history, every page in turn, \`limit=100\` | **${lat(r.history.walk)}** | ${whole(r.history.walk.pages)} pages, ${whole(r.history.walk.items)} revisions in ${r.history.walk.seconds.toFixed(1)} s | (limit 100) ${p99Verdict(r.history.walk, HISTORY_P99_MS)} |`,
    `| 5c. history, \`limit=50\` at random cursors from 5b | **${lat(r.history.jumps)}** | | ${p99Verdict(r.history.jumps, HISTORY_P99_MS)} |`,
    '',
    ...(r.plans
      ? [
          `History page statement (history.repository.ts, EXPLAIN ANALYZE after the run, world-wide page of 51 rows): newest page: ${r.plans.newest}; cursor halfway down: ${r.plans.deep}.`,
          '',
        ]
      : []),
    `Problems found while checking the answers: ${problems.length ? problems.join('; ') : 'none'}.`,
    '',
  ].join('\n');
}

export function worldsReport(
  results: Partial<Record<Backend, WorldsResults>>,
  context: { command: string; environment: string; code: string; minutes: number },
): string {
  return [
    '# World content: room loads, batch writes, chunk PUTs, co-editing and history',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)} in ${context.minutes.toFixed(1)} min. ${context.environment} ${context.code}`,
    '',
    'The machine is shared (2 cores; other test runs may have been going on), so figures are noisy: compare them within a run, not across runs. The load generator (fetch, ws, msgpack decoding) runs in the benchmark process on the same cores as the service, and its own time is inside every latency.',
    '',
    `- **1.** One room of ${whole(BULK_CHUNKS)} chunks of ${whole(BULK_CHUNK_BYTES)} bytes (codec bytes with pseudo-random floats, one byte varied per chunk), seeded by 10 msgpack batches. MB/s are 10^6 payload bytes per second, median of ${BULK_REPS} repetitions (range beside), REST, socket and ceiling interleaved after one warm-up each. Ceiling: \`${CEILING_SQL}\`, a prepared statement through \`pg\` on the same database (embedded: PGlite queried in the benchmark process, on a copy of the service's data directory taken with the service stopped, since PGlite files belong to one process). The service reads each chunk as of one content revision, page by page (docs/worlds.md), and encodes msgpack; the ceiling reads the heads in one statement.`,
    `- **2.** ${BATCHES} batches after 3 warm-up ones, one request in flight, each writing ${BATCH_WRITES} new coordinates with \`expected_revision: null\` (body encoded before the clock starts). With ${BATCHES} samples the p99 (nearest rank) is the slowest request.`,
    `- **3.** ${EDITORS} closed-loop editors (fetch, keep-alive), each on its own chunk with \`If-Match\` its last revision, ${PUT_BYTES}-byte payload, 1 s warm-up then the measured window (\`--seconds\`).`,
    `- **4.** ${SUBSCRIBERS} sockets subscribed to one room (\`chunks.subscribe\`), one editor socket sending \`chunks.put\` of ${COEDIT_BYTES} bytes at ${PUTS_PER_SECOND}/s for \`--seconds\`, each put a new chunk; latency from the send to each subscriber's \`chunks.commit\` (same process, same clock; taken on arrival, before decoding). Postgres: A and B are two service processes sharing DATABASE_URL, REDIS_URL and DATA_DIR.`,
    `- **5.** A world of ${whole(HISTORY_REVISIONS)} revisions (10,000 chunks of one room x 100 revisions, every tenth a tombstone, 100-byte payloads) inserted with SQL (\`nextval('chunk_revision_ids')\`, heads and \`content_revision\` set afterwards, then \`vacuum analyze\`). One request in flight: the newest page 200 times, then every page following \`next_cursor\` (checking that ids only go down and that every revision is listed once), then 1,000 pages at random cursors collected during the walk.`,
    '',
    ...(Object.entries(results) as [Backend, WorldsResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
