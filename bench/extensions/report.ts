import type { Backend } from '../backends.js';
import { pct, verdict, whole } from '../realtime/format.js';
import { type ContenderRounds, ratio, summarize, type WindowFigures } from '../realtime/rounds.js';
import type { RunContext } from '../scenario.js';
import { ELSEWHERE, type ExtensionsResults, NO_EXTENSION, NOOP_BEFORE, type Variant } from './measure.js';

/** bench/results/extensions.md: CPU per call of each service beside the others, and the echo rpc's ratios. */

/** The issue's targets: CPU per call of a call with no hook, of one with a no-op hook, and the rpc's throughput. */
const NO_HOOK_CPU = 1.02;
const NOOP_HOOK_CPU = 1.1;
const RPC_THROUGHPUT = 0.8;

const usPerCall = (w: WindowFigures) => (w.serverCores * 1e6) / w.perSecond;

/** Median CPU per call over the reference's, and the same ratio taken round by round. */
function cpuRatio(subject: ContenderRounds<WindowFigures>, reference: ContenderRounds<WindowFigures>) {
  const perRound = subject.windows.map(
    (w, i) => usPerCall(w) / usPerCall(reference.windows[i] as WindowFigures),
  );
  return {
    ratio: summarize(subject.windows).serverUsPerOp / summarize(reference.windows).serverUsPerOp,
    spread: `${pct(Math.min(...perRound))}–${pct(Math.max(...perRound))}`,
  };
}

function cpuCell(
  subject: ContenderRounds<WindowFigures>,
  reference: ContenderRounds<WindowFigures> | undefined,
) {
  if (!reference || reference === subject) return '';
  const { ratio, spread } = cpuRatio(subject, reference);
  return `**${pct(ratio)}** (${spread})`;
}

/** The target a variant's row is held to, against the service it is compared with. */
function target(
  variant: Variant,
  rounds: ContenderRounds<WindowFigures>,
  noExtension: ContenderRounds<WindowFigures>,
  before: ContenderRounds<WindowFigures> | undefined,
): string {
  if (variant === NOOP_BEFORE) {
    const met = cpuRatio(rounds, noExtension).ratio <= NOOP_HOOK_CPU;
    return `≤ ${pct(NOOP_HOOK_CPU)} of no extension: ${verdict(met)}`;
  }
  if (variant === ELSEWHERE || (variant === NO_EXTENSION && before)) {
    const reference = before ?? noExtension;
    const met = cpuRatio(rounds, reference).ratio <= NO_HOOK_CPU;
    return `≤ ${pct(NO_HOOK_CPU)} of ${before ? 'the commit before' : 'no extension'}: ${verdict(met)}`;
  }
  return 'reference';
}

function cpuTable(operation: string, results: ExtensionsResults, rounds: ContenderRounds<WindowFigures>[]) {
  const { variants } = results;
  const noExtension = rounds[variants.indexOf(NO_EXTENSION)] as ContenderRounds<WindowFigures>;
  const before = variants.length > 3 ? rounds[3] : undefined;
  return variants.map((variant, i) => {
    const r = rounds[i] as ContenderRounds<WindowFigures>;
    const s = summarize(r.windows);
    const cells = [
      operation,
      variant.name,
      `${whole(s.median)} (${whole(s.min)}–${whole(s.max)})`,
      s.serverUsPerOp.toFixed(1),
      cpuCell(r, noExtension),
      ...(before ? [cpuCell(r, before)] : []),
      target(variant, r, noExtension, before),
    ];
    return `| ${cells.join(' | ')} |`;
  });
}

function rpcRow(
  what: string,
  rpc: ContenderRounds<WindowFigures>,
  reference: ContenderRounds<WindowFigures>,
  target: number | undefined = RPC_THROUGHPUT,
) {
  const r = ratio(rpc, reference);
  const held =
    target === undefined ? 'none (for comparison)' : `≥ ${pct(target)}: ${verdict(r.ratio >= target)}`;
  const [a, b] = [summarize(rpc.windows), summarize(reference.windows)];
  return `| ${what} | ${whole(a.median)} (${whole(a.min)}–${whole(a.max)}) | ${whole(b.median)} | **${pct(r.ratio)}** (${pct(r.perRoundMin)}–${pct(r.perRoundMax)}) | ${a.serverUsPerOp.toFixed(1)} / ${b.serverUsPerOp.toFixed(1)} | ${held} |`;
}

function errorsOf(results: ExtensionsResults): string {
  const rest = [...results.reads, ...results.sends].flatMap((r) => [r.warmUp, ...r.windows]);
  const restErrors = rest.reduce((sum, w) => sum + w.errors + w.non2xx, 0);
  const frames: Record<string, number> = {};
  for (const w of results.frames.flatMap((r) => [r.warmUp, ...r.windows]))
    for (const [code, n] of Object.entries(w.errors)) frames[code] = (frames[code] ?? 0) + n;
  const frameText =
    Object.entries(frames)
      .map(([code, n]) => `${n} x ${code}`)
      .join(', ') || 'none';
  return `Errors: REST ${restErrors} (connection errors, timeouts and non-2xx answers); frames ${frameText}.`;
}

function section(backend: Backend, results: ExtensionsResults): string {
  const { variants, reads, sends, frames } = results;
  const before = variants[3];
  const echo = reads[variants.length] as ContenderRounds<WindowFigures>;
  const elsewhereMe = reads[variants.indexOf(ELSEWHERE)] as ContenderRounds<WindowFigures>;
  return [
    `## ${backend === 'embedded' ? 'Embedded (PGlite, in-process KV)' : 'Postgres 127.0.0.1:5432 + Redis'}`,
    '',
    `| operation | service | calls/s (range) | µs CPU/call | ÷ no extension (per round) | ${before ? `÷ ${before.name} (per round) | ` : ''}target |`,
    `|---|---|---|---|---|${before ? '---|' : ''}---|`,
    ...cpuTable('`GET /api/users/me`', results, reads),
    ...cpuTable('`dm.send` (REST)', results, sends),
    '',
    '| rpc `echo` | calls/s (range) | reference calls/s | ratio (per round) | µs CPU/call, rpc / reference | target |',
    '|---|---|---|---|---|---|',
    rpcRow('`POST /api/rpc/echo` beside `GET /api/users/me`', echo, elsewhereMe),
    rpcRow(
      '`rpc` frames beside `ping` frames',
      frames[1] as ContenderRounds<WindowFigures>,
      frames[0] as ContenderRounds<WindowFigures>,
    ),
    rpcRow(
      '`rpc` frames beside `presence.heartbeat` frames',
      frames[1] as ContenderRounds<WindowFigures>,
      frames[2] as ContenderRounds<WindowFigures>,
      undefined,
    ),
    '',
    errorsOf(results),
    '',
  ].join('\n');
}

export function extensionsReport(
  results: Partial<Record<Backend, ExtensionsResults>>,
  context: RunContext,
): string {
  const first = Object.values(results)[0];
  const before = first?.variants[3];
  return [
    '# Extensions: the cost of the hook path',
    '',
    `Written by \`${context.command}\` on ${new Date().toISOString().slice(0, 10)}, in ${context.minutes.toFixed(1)} minutes. ${context.environment} ${context.code}`,
    '',
    `Each service runs in its own process on the same seeded data (embedded: a copy of it each), all started before the load, and takes turns with the others: ${context.rounds} (bench/realtime/rounds.ts). The services: **no extension** (\`EXTENSIONS\` unset); **hooks on other operations** (bench/extensions/other-operations.mjs: hooks on profile.update, groups.join and chat.sendToWorld, and the echo rpc), so the measured operations take the path of an operation with no hook while extensions are loaded; **one no-op before hook** on each measured operation (bench/extensions/noop-before.mjs)${before ? `; **${before.name}**, the service of another checkout (\`--base\`), with no extension, in the same rounds` : ''}. Load: autocannon, 50 connections, each request as a random one of 200 seeded users (\`dm.send\`: to the next user, as the chat bench sends); frames: 50 sockets x 16 in flight on the service with hooks elsewhere, \`ping\`, \`rpc\` (echo) and, for comparison, \`presence.heartbeat\` (an acked frame of the catalogue, one KV write). µs CPU/call is the service process's CPU time (user + system, /proc) over a window divided by the calls answered in it, median of the windows; a ratio is the median's over the reference's, with the same ratio taken round by round beside it. The services without a hook on the measured operations register them with their service functions themselves (src/platform/operation-hooks.ts), so how far they land from each other is the noise this run cannot resolve.${before ? '' : ' The comparison with the commit before extensions is the same scenario with `--base <worktree of that commit>` (`git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci)`): its service joins the rounds.'}`,
    '',
    ...(Object.entries(results) as [Backend, ExtensionsResults][]).map(([backend, r]) => section(backend, r)),
  ].join('\n');
}
