import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { type Backend, scenarioOptions } from './backends.js';
import { type BackendResults, measureBackend } from './datapath/measure.js';
import { datapathReport } from './datapath/report.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './realtime/progress.js';
import { roundSchedule } from './realtime/rounds.js';
import { serviceNodeArgs } from './service.js';

/**
 * Data-path benchmark: database-backed operations of the service beside ceilings measured in the
 * same run (bare Fastify + the same SELECT, bare uWS + the same UPDATE, pgbench + the same upsert,
 * with the same pool size), in interleaved rounds, on embedded PGlite and on Postgres + Redis.
 * Usage: npm run bench -- datapath [--seconds N] [--backends embedded,postgres] [--profile DIR]
 * (--profile writes a V8 CPU profile of each atrium instance into DIR). Writes bench/results/datapath.md.
 */
export async function run(seconds: number): Promise<string> {
  const { backends, profile } = scenarioOptions();
  const nodeArgs = await serviceNodeArgs(profile);
  const schedule = roundSchedule(seconds);
  const before = codeState();
  progress(
    `Node ${process.version}, ${availableParallelism()} cores, ${schedule.rounds} rounds of ${schedule.windowSeconds} s`,
  );
  const results: Partial<Record<Backend, BackendResults>> = {};
  for (const backend of backends) results[backend] = await measureBackend(backend, schedule, nodeArgs);
  const report = datapathReport(results, schedule, codeLine(before, codeState()));
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/datapath.md', report);
  console.log(report);
  return report;
}
