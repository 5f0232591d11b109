import type { Backend } from '../backends.js';
import { pct, whole } from '../realtime/format.js';
import {
  type ContenderRounds,
  type RoundSchedule,
  ratio,
  summarize,
  type WindowFigures,
} from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import { type BackendResults, STATUS_SOCKETS } from './measure.js';

/** bench/results/datapath.md: one table per backend, service beside ceiling per operation. */

const TARGETS = { me: 0.6, status: 0.5, loadout: 0.5 };
const STATUS_P99_TARGET_MS = 20;

type Latencies = WindowFigures & { p50Ms?: number; p99Ms?: number; meanMs?: number };

function latency(rounds: ContenderRounds<Latencies>): string {
  const of = (pick: (w: Latencies) => number | undefined) =>
    median(rounds.windows.map((w) => pick(w) ?? Number.NaN));
  const p50 = of((w) => w.p50Ms);
  if (Number.isNaN(p50)) return `mean ${of((w) => w.meanMs).toFixed(2)}`;
  return `${p50.toFixed(2)} / ${of((w) => w.p99Ms).toFixed(2)}`;
}

function cpu(rounds: ContenderRounds<WindowFigures>): string {
  const us = summarize(rounds.windows).serverUsPerOp;
  return Number.isNaN(us) ? 'n/a' : whole(us);
}

function row(
  operation: string,
  ceilingName: string,
  target: number,
  atrium: ContenderRounds<Latencies>,
  ceiling: ContenderRounds<Latencies>,
): string {
  const a = summarize(atrium.windows);
  const c = summarize(ceiling.windows);
  const r = ratio(atrium, ceiling);
  const met = r.ratio >= target ? 'met' : 'not met';
  return `| ${operation} | **${whole(a.median)}** (${whole(a.min)}–${whole(a.max)}) | ${ceilingName}: ${whole(c.median)} | **${pct(r.ratio)}** (${pct(r.perRoundMin)}–${pct(r.perRoundMax)}) | ≥ ${pct(target)}: ${met} | ${latency(atrium)} | ${latency(ceiling)} | ${cpu(atrium)} | ${cpu(ceiling)} |`;
}

function errorsOf(results: BackendResults): string {
  const rest = [results.me.atrium, results.loadout.atrium, results.me.ceiling].flatMap((r) => [
    r.warmUp,
    ...r.windows,
  ]);
  const restErrors = rest.reduce((sum, w) => sum + w.errors + w.non2xx, 0);
  const frames: Record<string, number> = {};
  for (const w of [results.status.atrium, results.status.ceiling].flatMap((r) => [r.warmUp, ...r.windows]))
    for (const [code, n] of Object.entries(w.errors)) frames[code] = (frames[code] ?? 0) + n;
  const frameText =
    Object.entries(frames)
      .map(([code, n]) => `${n} x ${code}`)
      .join(', ') || 'none';
  return `Errors: REST ${restErrors} (connection errors, timeouts and non-2xx answers); frames ${frameText}.`;
}

function section(backend: Backend, results: BackendResults): string {
  const p99 = median(results.status.atrium.windows.map((w) => w.p99Ms));
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis'}`,
    '',
    `Pool size ${results.poolSize} for the service and every ceiling.`,
    '',
    '| operation | atrium ops/s (range) | ceiling ops/s | atrium / ceiling (per round) | target | atrium p50 / p99 ms | ceiling p50 / p99 ms | atrium µs CPU/op | ceiling µs CPU/op |',
    '|---|---|---|---|---|---|---|---|---|',
    row(
      '`GET /api/users/me`, 50 connections',
      'bare Fastify + same SELECT',
      TARGETS.me,
      results.me.atrium,
      results.me.ceiling,
    ),
    row(
      `\`presence.status\` frame, ${STATUS_SOCKETS} sockets x 1`,
      'bare uWS + same UPDATE',
      TARGETS.status,
      results.status.atrium,
      results.status.ceiling,
    ),
    row(
      '`PUT /api/avatar/loadout` (1 KiB), 50 connections',
      `pgbench, ${results.poolSize} connections`,
      TARGETS.loadout,
      results.loadout.atrium,
      results.loadout.ceiling,
    ),
    '',
    `Status frame p99: ${p99.toFixed(2)} ms (target ≤ ${STATUS_P99_TARGET_MS} ms: ${p99 <= STATUS_P99_TARGET_MS ? 'met' : 'not met'}). ${errorsOf(results)}`,
    '',
  ].join('\n');
}

export function datapathReport(
  results: Partial<Record<Backend, BackendResults>>,
  schedule: RoundSchedule,
  code: string,
): string {
  return [
    '# Data path: database-backed operations beside their ceilings',
    '',
    `Written by \`npm run bench -- datapath\` on ${new Date().toISOString().slice(0, 10)}. ${code}`,
    '',
    `Each operation runs in ${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows with its ceiling (bench/realtime/rounds.ts): the figure is the median window, the range the lowest and highest, the ratio the ratio of medians with the per-round ratios beside it. Ceilings: \`bench/bare-fastify-pg.ts\` and \`bench/bare-uws-pg.ts\` run the same statement through \`pg\` with a named prepared statement (embedded: PGlite queried in process, on a copy of the seeded database); pgbench runs the same upsert prepared (embedded: against PGlite's socket server). CPU per operation is the server process's (n/a for pgbench on Postgres, whose work is spread over its backends).`,
    '',
    ...(Object.entries(results) as [Backend, BackendResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
