import { pct, verdict, whole } from '../realtime/format.js';
import { type ContenderRounds, ratio, summarize, type WindowFigures } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import { BUYERS, type EconomyResults, FEE_BPS, PRICE, SELLERS } from './measure.js';

/** bench/results/economy.md. */

const CEILING_RATIO = 0.5;

type Window = WindowFigures & {
  p50Ms?: number;
  p99Ms?: number;
  meanMs?: number;
  non2xx?: number;
  errors?: number;
};

const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);

function rate(rounds: ContenderRounds<Window>): string {
  const s = summarize(rounds.windows);
  const p50 = median(rounds.windows.map((w) => w.p50Ms ?? Number.NaN));
  const latencies = Number.isNaN(p50)
    ? `mean ${ms(median(rounds.windows.map((w) => w.meanMs ?? Number.NaN)))} ms`
    : `p50 ${ms(p50)} / p99 ${ms(median(rounds.windows.map((w) => w.p99Ms ?? Number.NaN)))} ms`;
  const cpu = Number.isNaN(s.serverUsPerOp)
    ? ''
    : `; service ${whole(s.serverUsPerOp)} µs CPU/purchase (${s.serverCores.toFixed(2)} cores)`;
  return `**${whole(s.median)} purchases/s** (${whole(s.min)}–${whole(s.max)}), ${latencies}${cpu}; machine ${s.machineCores.toFixed(2)} cores busy`;
}

export function economyReport(
  results: EconomyResults,
  meta: {
    command: string;
    environment: string;
    code: string;
    minutes: number;
    rounds: string;
    poolSize: number;
  },
): string {
  const r = ratio(results.rest, results.ceiling);
  const refused = results.rest.windows.reduce((n, w) => n + (w.non2xx ?? 0) + (w.errors ?? 0), 0);
  const crash = results.crash;
  return `# Economy benchmark

\`${meta.command}\` — ${meta.environment} ${meta.code} ${meta.minutes.toFixed(1)} minutes.
${results.database}, Redis; service pool ${meta.poolSize}. ${meta.rounds}.

${BUYERS} buyers with large wallets buy at random from ${SELLERS} sellers' unlimited consumable
listings at ${PRICE} (fee ${FEE_BPS} bps), each request with a fresh Idempotency-Key: every
purchase moves the buyer's wallet, the seller's pending account and the platform's revenue account
(the one row every purchase locks). The ceiling is pgbench running the purchase's statements in a
transaction (bench/economy/ceiling.ts) with ${meta.poolSize} connections.

| Load | Figures | Against the ceiling | Target |
|---|---|---|---|
| REST, ${BUYERS} connections | ${rate(results.rest)} | **${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)}); non-2xx and errors: ${refused} | ≥ ${pct(CEILING_RATIO)}: ${verdict(r.ratio >= CEILING_RATIO)} |
| pgbench -c ${meta.poolSize} | ${rate(results.ceiling)} | | |

\`economy verify\` after the rounds: ${results.verifiedAfterRounds.clean ? '**clean**' : '**differences**'} (\`${results.verifiedAfterRounds.output.split('\n').at(-1)}\`).

## SIGKILL in the middle of a purchase load

${BUYERS} buyers, one request in flight each, the service killed with SIGKILL halfway:
${whole(crash.acknowledged)} purchases acknowledged (201), **${whole(crash.found)}** of them found
in the ledger with their transaction (${verdict(crash.found === crash.acknowledged)}: no
acknowledged purchase lost); ${whole(crash.stored)} purchases stored during the run (any beyond
the acknowledged ones committed, and their answer was lost with the process);
${whole(crash.failedRequests)} requests failed with the connection. \`economy verify\` afterwards:
${crash.verified.clean ? '**clean**' : '**differences**'} (${verdict(crash.verified.clean)}: no half-applied purchase).
`;
}
