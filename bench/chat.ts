import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { type ChatResults, measureChat } from './chat/measure.js';
import { chatReport } from './chat/report.js';
import { POOL_SIZE } from './datapath/measure.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './realtime/progress.js';
import { roundSchedule } from './realtime/rounds.js';
import { profilingNodeArgs } from './service.js';

/**
 * Direct messages: end-to-end latency across two instances at 1,000 messages/s, send throughput
 * (socket and REST) beside a pgbench ceiling of the same statements, and the recovery of 1,000
 * missed events. Usage: npm run bench -- chat [--backends embedded,postgres] [--seconds N] (N: the
 * latency window and the measured time per contender of the throughput rounds, default 10; the
 * embedded backend runs the recovery only) [--profile DIR] (a V8 CPU profile of each atrium
 * instance into DIR). Writes bench/results/chat.md.
 */
export async function run(seconds: number): Promise<string> {
  const { backends, profile } = scenarioOptions();
  const nodeArgs = await profilingNodeArgs(profile);
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, ChatResults>> = {};
  for (const backend of backends) results[backend] = await measureChat(backend, schedule, seconds, nodeArgs);
  const report = chatReport(results, {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
    rounds: `${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each`,
    poolSize: POOL_SIZE,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/chat.md', report);
  console.log(report);
  return report;
}
