import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { type DiscoveryResults, measureDiscovery } from './discovery/measure.js';
import { discoveryReport } from './discovery/report.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './realtime/progress.js';
import { roundSchedule } from './realtime/rounds.js';
import { profilingNodeArgs } from './service.js';

/**
 * Discovery: search pages of 100,000 public worlds (text, tag and each sort) beside pgbench
 * running the same statements, joins of one hot world beside pgbench running the join transaction
 * with and without the visit, and the fold and ranking jobs' durations. Usage: npm run bench --
 * discovery [--backends embedded,postgres] [--seconds N] (N: the measured time per contender of
 * the rounds, and twice each one-client latency run; default 10) [--profile DIR] (a V8 CPU profile
 * of the service into DIR). Writes bench/results/discovery.md.
 */
export async function run(seconds: number): Promise<string> {
  const { backends, profile } = scenarioOptions();
  const nodeArgs = await profilingNodeArgs(profile);
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, DiscoveryResults>> = {};
  for (const backend of backends)
    results[backend] = await measureDiscovery(backend, schedule, seconds, nodeArgs);
  const report = discoveryReport(results, {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
    rounds: `${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each`,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/discovery.md', report);
  console.log(report);
  return report;
}
