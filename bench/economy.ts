import { mkdir, writeFile } from 'node:fs/promises';
import { machineLine, scenarioOptions } from './backends.js';
import { POOL_SIZE } from './datapath/measure.js';
import { measureEconomy } from './economy/measure.js';
import { economyReport } from './economy/report.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { roundSchedule } from './realtime/rounds.js';
import { serviceNodeArgs } from './service.js';

/**
 * Purchases on Postgres + Redis beside a pgbench ceiling of the same statements, `economy verify`
 * after them, and a purchase load killed with SIGKILL. Usage: npm run bench -- economy
 * [--seconds N] (the measured time per contender and round, and the length of the killed load;
 * default 10) [--profile DIR] (a V8 CPU profile of the measured instance into DIR). Writes
 * bench/results/economy.md.
 */
export async function run(seconds: number): Promise<string> {
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  const nodeArgs = await serviceNodeArgs(scenarioOptions().profile);
  const results = await measureEconomy(schedule, seconds, nodeArgs);
  const report = economyReport(results, {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
    rounds: `${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each`,
    poolSize: POOL_SIZE,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/economy.md', report);
  console.log(report);
  return report;
}
