import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './worlds/harness.js';
import { measureWorlds, type WorldsResults } from './worlds/measure.js';
import { worldsReport } from './worlds/report.js';

/**
 * World content: room loads (REST and socket) beside plain SQL, batch writes, chunk PUTs with 50
 * editors, co-editing latency across two instances and history pages over 1,000,000 revisions.
 * Usage: npm run bench -- worlds [--backends embedded,postgres] [--seconds N] (N: the PUT and
 * co-editing windows, default 10). Writes bench/results/worlds.md.
 */
export async function run(seconds: number): Promise<string> {
  const { backends } = scenarioOptions();
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, WorldsResults>> = {};
  for (const backend of backends) results[backend] = await measureWorlds(backend, seconds);
  const args = process.argv.slice(2).join(' ');
  const report = worldsReport(results, {
    command: `npm run bench -- ${args}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/worlds.md', report);
  console.log(report);
  return report;
}
