import fc from 'fast-check';
import { ErrorCode } from '../../protocol/errors.js';
import { exposedGc } from '../helpers/gc.js';

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return value;
}

/**
 * Run settings from the environment, so the same files serve `npm test` (a few hundred cases),
 * `npm run fuzz` (FUZZ_CASES per target) and the replay of one failing case (FUZZ_CASE).
 */
export const settings = {
  seed: envNumber('FUZZ_SEED', 20_261_122),
  /** Cases per target (operation or frame type); 0 means the file's short-run default. */
  cases: envNumber('FUZZ_CASES', 0),
  /** Only targets whose name contains this text. */
  only: process.env.FUZZ_ONLY ?? '',
  /** Replays only the case with this index (with FUZZ_SEED and FUZZ_ONLY naming the target). */
  caseIndex: process.env.FUZZ_CASE === undefined ? undefined : envNumber('FUZZ_CASE', 0),
  concurrency: Math.max(1, envNumber('FUZZ_CONCURRENCY', 4)),
  /**
   * Growth of boundedMemory() allowed over the start of the file: 256 MB of live memory after a
   * full collection, or twice that of resident set when gc is not exposed (`npm test`), which
   * also keeps what PGlite's WebAssembly memory and the allocator grew to and never give back;
   * a short run of every target grows it by 150-550 MB without leaking, so past it the live
   * memory decides (overBound).
   */
  memoryBoundBytes:
    envNumber('FUZZ_MEMORY_BOUND_MB', (globalThis as { gc?: unknown }).gc ? 256 : 512) * 1024 * 1024,
  /** Progress lines and full histograms only when asked for a sized run; `npm test` stays quiet. */
  verbose: process.env.FUZZ_CASES !== undefined,
};

/** Every documented error code; anything else on the wire is a bug. */
export const documentedCodes: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/** What one case did: a histogram bucket, and a failure sentence when an assertion broke. */
export interface Outcome {
  bucket: string;
  failure?: string;
}

export interface Failure {
  index: number;
  message: string;
  reproduction: string;
}

export interface TargetStats {
  name: string;
  cases: number;
  durationMs: number;
  histogram: Map<string, number>;
  failures: Failure[];
  failureCount: number;
  /** boundedMemory() after the target's last case. */
  memoryAfter: number;
}

/** A stable 31-bit seed per target and batch, so any case can be regenerated without the ones before it. */
function seedFor(target: string, batch: number): number {
  let hash = 0x811c9dc5;
  for (const char of `${settings.seed}:${target}:${batch}`) {
    hash ^= char.charCodeAt(0);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash & 0x7fffffff;
}

const BATCH = 200;

/** The cases of a target, generated a batch at a time from their seeds (or just the one being replayed). */
function* casesOf<C>(target: string, arbitrary: fc.Arbitrary<C>, count: number): Generator<[number, C]> {
  const replay = settings.caseIndex;
  for (let start = 0; start < count; start += BATCH) {
    if (replay !== undefined && (replay < start || replay >= start + BATCH)) continue;
    const batch = fc.sample(arbitrary, {
      seed: seedFor(target, start / BATCH),
      numRuns: Math.min(BATCH, count - start),
    });
    for (const [offset, value] of batch.entries()) {
      if (replay === undefined || replay === start + offset) yield [start + offset, value];
    }
  }
}

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * The quantity the memory bound applies to. With gc exposed (`npm run fuzz` starts the worker with
 * --expose-gc) it is the live heap plus external buffers after a full collection, which is what a
 * leak grows; the resident set also holds pages the allocator and PGlite's WebAssembly memory keep
 * after use and do not give back, so it is only the fallback (as in `npm test`).
 */
/** Heap and external buffers after a full collection: what a leak grows. */
function liveMemory(): number {
  (gc ?? exposedGc())();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/** A file's memory at its start: boundedMemory(), and the live memory the bound falls back to. */
export interface MemoryStart {
  bounded: number;
  live: number;
}

export function memoryStart(): MemoryStart {
  return { bounded: boundedMemory(), live: liveMemory() };
}

/**
 * The growth past the bound since `start`, or undefined within it. A resident set over the bound
 * (`npm test`, gc not exposed) is checked again as live memory after a full collection, against
 * the bound gc mode has: the resident set keeps pages the allocator and PGlite do not give back,
 * and how many depends on when V8 last collected, not on what leaked.
 */
export function overBound(start: MemoryStart, memoryAfter: number): number | undefined {
  if (memoryAfter - start.bounded < settings.memoryBoundBytes) return undefined;
  if (gc) return memoryAfter - start.bounded;
  const live = liveMemory() - start.live;
  return live < LIVE_BOUND_BYTES ? undefined : live;
}

/** The bound on live memory growth after a full collection (gc mode's default). */
const LIVE_BOUND_BYTES = 256 * 1024 * 1024;

export function boundedMemory(): number {
  if (!gc) return process.memoryUsage().rss;
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}
export const boundedMemoryName = gc ? 'heap+external after GC' : 'RSS';

export const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;

/** Keeps the failures readable: the first few of each distinct message in full, the rest counted. */
const FAILURES_KEPT_PER_MESSAGE = 3;

/**
 * Runs `count` generated cases of one target through `execute` with a few in flight, records a
 * histogram of outcomes and every broken assertion with a reproduction, and prints a progress line.
 */
export async function runTarget<C>(options: {
  suite: string;
  file: string;
  target: string;
  arbitrary: fc.Arbitrary<C>;
  count: number;
  execute: (testCase: C, index: number) => Promise<Outcome>;
  describe: (testCase: C) => string;
  /** Called between batches (liveness probes, socket recycling); a string return is a failure. */
  checkpoint?: () => Promise<string | undefined>;
  concurrency?: number;
}): Promise<TargetStats> {
  const started = performance.now();
  const stats: TargetStats = {
    name: options.target,
    cases: 0,
    durationMs: 0,
    histogram: new Map(),
    failures: [],
    failureCount: 0,
    memoryAfter: 0,
  };
  const seen = new Map<string, number>();
  const fail = (index: number, message: string, testCase: C | undefined) => {
    stats.failureCount++;
    const times = seen.get(message) ?? 0;
    seen.set(message, times + 1);
    if (times >= FAILURES_KEPT_PER_MESSAGE) return;
    // A case is regenerated from its batch, and a batch's size depends on the case count.
    const replay = `FUZZ_SEED=${settings.seed} FUZZ_CASES=${options.count} FUZZ_ONLY='${options.target}' FUZZ_CASE=${index} npx vitest run ${options.file}`;
    const input = testCase === undefined ? '(between cases)' : options.describe(testCase);
    stats.failures.push({ index, message, reproduction: `${replay}\n      input: ${input}` });
  };
  const inFlight = new Set<Promise<void>>();
  let sinceCheckpoint = 0;
  for (const [index, testCase] of casesOf(options.target, options.arbitrary, options.count)) {
    const run = options
      .execute(testCase, index)
      .catch((error: unknown) => ({ bucket: 'harness-error', failure: `the fuzzer threw: ${String(error)}` }))
      .then((outcome) => {
        stats.cases++;
        stats.histogram.set(outcome.bucket, (stats.histogram.get(outcome.bucket) ?? 0) + 1);
        if (outcome.failure) fail(index, outcome.failure, testCase);
      })
      .finally(() => inFlight.delete(run));
    inFlight.add(run);
    if (inFlight.size >= (options.concurrency ?? settings.concurrency)) await Promise.race(inFlight);
    if (++sinceCheckpoint >= BATCH && options.checkpoint) {
      await Promise.all(inFlight);
      sinceCheckpoint = 0;
      const problem = await options.checkpoint();
      if (problem) fail(index, problem, undefined);
    }
  }
  await Promise.all(inFlight);
  const problem = await options.checkpoint?.();
  if (problem) fail(stats.cases, problem, undefined);
  stats.durationMs = performance.now() - started;
  stats.memoryAfter = boundedMemory();
  const rate = Math.round((stats.cases / stats.durationMs) * 1000);
  if (settings.verbose) {
    process.stdout.write(
      `[fuzz ${options.suite}] ${options.target}: ${stats.cases} cases in ${(stats.durationMs / 1000).toFixed(1)} s ` +
        `(${rate}/s), ${stats.failureCount} failures, ${boundedMemoryName} ${mb(stats.memoryAfter)}` +
        `${gc ? `, rss ${mb(process.memoryUsage().rss)}` : ''}\n`,
    );
  }
  return stats;
}

function histogramLine(histogram: Map<string, number>): string {
  return [...histogram.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([bucket, n]) => `${bucket}: ${n}`)
    .join(', ');
}

/** The end-of-file summary: cases per target, outcome histograms, failures with reproductions, time, memory. */
export function summary(suite: string, all: TargetStats[], startMemory: number, startedAt: number): string {
  const total = all.reduce((sum, s) => sum + s.cases, 0);
  const failures = all.reduce((sum, s) => sum + s.failureCount, 0);
  const overall = new Map<string, number>();
  for (const s of all)
    for (const [bucket, n] of s.histogram) overall.set(bucket, (overall.get(bucket) ?? 0) + n);
  const lines = [
    '',
    `===== fuzz ${suite} summary (seed ${settings.seed}) =====`,
    `${all.length} targets, ${total} cases, ${failures} failures, ${((performance.now() - startedAt) / 1000).toFixed(1)} s, ` +
      `${boundedMemoryName} start ${mb(startMemory)}, end ${mb(boundedMemory())}; ` +
      `peak RSS ${mb(process.resourceUsage().maxRSS * 1024)}, end RSS ${mb(process.memoryUsage().rss)}`,
    ...(settings.verbose
      ? all.map(
          (s) =>
            `  ${s.name}: ${s.cases} cases, ${(s.durationMs / 1000).toFixed(1)} s, ${s.failureCount} failures\n` +
            `      ${histogramLine(s.histogram)}`,
        )
      : []),
    `  all: ${histogramLine(overall)}`,
  ];
  for (const s of all) {
    for (const f of s.failures)
      lines.push(`  FAIL ${s.name} #${f.index}: ${f.message}\n      ${f.reproduction}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Shortens text for a report line, saying how long it was. */
export function preview(text: string, max = 240): string {
  const flat = JSON.stringify(text);
  return flat.length <= max ? flat : `${flat.slice(0, max)}… (${text.length} chars)`;
}
