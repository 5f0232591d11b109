import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { type GroupsResults, measureGroups } from './groups/measure.js';
import { groupsReport } from './groups/report.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './realtime/progress.js';
import { roundSchedule } from './realtime/rounds.js';
import { profilingNodeArgs } from './service.js';

/**
 * Groups: roster pages of a 10,000-member group and joins of one open group beside pgbench, and
 * group chat latency with 500 members online on two instances. Usage: npm run bench -- groups
 * [--backends embedded,postgres] [--seconds N] (N: the chat latency window and the measured time
 * per contender of the rounds, default 10; the embedded backend runs no chat) [--profile DIR]
 * (a V8 CPU profile of instance A into DIR). Writes bench/results/groups.md.
 */
export async function run(seconds: number): Promise<string> {
  const { backends, profile } = scenarioOptions();
  const nodeArgs = await profilingNodeArgs(profile);
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, GroupsResults>> = {};
  for (const backend of backends)
    results[backend] = await measureGroups(backend, schedule, seconds, nodeArgs);
  const report = groupsReport(results, {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
    rounds: `${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each`,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/groups.md', report);
  console.log(report);
  return report;
}
