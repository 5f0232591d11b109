import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { simulate } from './simulate.js';

/**
 * `npm run sim -- --seed N --steps M`: a seeded simulation of the economy against the real
 * service (docs/economy.md, "Seeded simulation"). Exits 0 when every invariant held, 1 with the
 * seed, the step, the action, what was expected, what happened and the command that replays it.
 *
 *   --seed N            the seed (default 1)
 *   --steps M           steps to run (default 1000)
 *   --no-faults         no kill -9, no database cuts
 *   --fail-on-503       a 503 while no fault is under way fails the run (else it is retried and listed)
 *   --fault-rate R      the chance that a step ends with a fault (default 0.0067, about 1 in 150)
 *   --full-every K      steps between the whole-database comparisons (default 250)
 *   --verify-every V    steps between runs of `atrium economy verify` (default 2000)
 *   --progress P        steps between progress lines (default 500, 0 for none)
 *   --verbose           print the service's output as it comes, and --outcomes
 *   --outcomes          at the end, how often each operation met each answer
 *   --keep-db           keep the database at the end, to look at it
 *   --trace FILE        write each request as sent (step, key, operation by slots), to compare runs
 *
 * DATABASE_URL names the Postgres server (default postgres://root@127.0.0.1:5432/test): the
 * simulation makes a database of its own there and drops it at the end. REDIS_URL, when set, is
 * the service's Redis; without it the service keeps its KV in process.
 */
const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    steps: { type: 'string', default: '1000' },
    'no-faults': { type: 'boolean', default: false },
    'fail-on-503': { type: 'boolean', default: false },
    'fault-rate': { type: 'string', default: String(1 / 150) },
    'full-every': { type: 'string', default: '250' },
    'verify-every': { type: 'string', default: '2000' },
    progress: { type: 'string', default: '500' },
    verbose: { type: 'boolean', default: false },
    outcomes: { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    trace: { type: 'string' },
  },
});

function whole(name: string, text: string | undefined, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    console.error(`--${name} must be an integer of at least ${min}, got ${text}`);
    process.exit(2);
  }
  return value;
}

const seed = whole('seed', values.seed, 0);
const steps = whole('steps', values.steps, 1);
const faultRate = Number(values['fault-rate']);
if (!(faultRate >= 0 && faultRate <= 1)) {
  console.error(`--fault-rate must be between 0 and 1, got ${values['fault-rate']}`);
  process.exit(2);
}
const serverUrl = process.env.DATABASE_URL || 'postgres://root@127.0.0.1:5432/test';

/** The flags besides --seed and --steps that change what a run does, for the replay command. */
function replayFlags(): string {
  const flags: string[] = [];
  if (values['no-faults']) flags.push('--no-faults');
  if (values['fail-on-503']) flags.push('--fail-on-503');
  if (values['fault-rate'] !== String(1 / 150)) flags.push(`--fault-rate ${values['fault-rate']}`);
  return flags.length ? ` ${flags.join(' ')}` : '';
}

const log = (line: string) => console.log(`[sim seed ${seed}] ${line}`);
log(
  `${steps} steps, faults ${values['no-faults'] ? 'off' : `on (rate ${faultRate.toFixed(4)})`}, server ${new URL(serverUrl).host}, ${process.env.REDIS_URL ? 'Redis' : 'in-process KV'}`,
);

const trace = values.trace === undefined ? undefined : createWriteStream(values.trace);
const result = await simulate({
  seed,
  steps,
  faults: !values['no-faults'],
  faultRate,
  fullEvery: whole('full-every', values['full-every'], 1),
  verifyEvery: whole('verify-every', values['verify-every'], 1),
  progressEvery: whole('progress', values.progress, 0),
  verbose: values.verbose,
  keepDatabase: values['keep-db'],
  failOn503: values['fail-on-503'],
  ...(trace ? { trace: (line: string) => trace.write(`${line}\n`) } : {}),
  serverUrl,
  log,
});

await new Promise((resolve) => (trace ? trace.end(resolve) : resolve(undefined)));
const c = result.counters;
const summary = c
  ? [
      `${result.steps} steps, ${result.faults.kills + result.faults.cuts} faults (kill -9 ${result.faults.kills}, database cut ${result.faults.cuts})`,
      `${c.requests} requests, ${c.attempts} attempts (${c.unanswered} unanswered, 503: ${c.unavailableDuringFaults} during faults, ${c.unavailableOutsideFaults} outside)`,
      `${c.retried} requests sent again after a lost answer, ${c.retriedReplayed} of them replayed (the lost attempt had done the write); ${c.replays} replayed answers in all`,
      `decided by timing: ${result.decidedByTiming.refunds} refunds at their hold's end, ${result.decidedByTiming.payouts} payout requests as holds came due`,
      `${result.verifies} economy verify runs, ${(result.elapsedMs / 1000).toFixed(1)} s`,
    ].join('\n    ')
  : `${(result.elapsedMs / 1000).toFixed(1)} s`;

if (result.failure) {
  const f = result.failure;
  console.error(`
SIMULATION FAILED
  seed:     ${seed}
  step:     ${f.step}
  action:   ${f.action}
  expected: ${f.expected}
  happened: ${f.happened}
  after:    ${summary}
  replay:   npm run sim -- --seed ${seed} --steps ${f.step}${replayFlags()}
`);
  process.exit(1);
}
if (c && c.unavailableOutsideFaults > 0) {
  log(`503s outside faults (the first ${c.unavailableOutside.length}):`);
  for (const line of c.unavailableOutside) log(`  ${line}`);
}
if (values.verbose || values.outcomes) {
  for (const [outcome, n] of [...result.outcomes].sort(([a], [b]) => (a < b ? -1 : 1)))
    log(`  ${n}\t${outcome}`);
}
log(`clean:\n    ${summary}`);
process.exit(0);
