import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { progress } from './realtime/progress.js';
import { type RoundSchedule, roundSchedule } from './realtime/rounds.js';
import { buildService, serviceNodeArgs } from './service.js';

/** What every report of a per-backend scenario says of its run, besides its figures. */
export interface RunContext {
  command: string;
  environment: string;
  code: string;
  minutes: number;
  rounds: string;
}

/**
 * Runs a scenario measured once per backend (`--backends`, `--profile`, `--compiled`: the compiled
 * build as production runs it, built first, instead of the sources through tsx) in interleaved rounds of
 * `seconds`, writes its report to bench/results/<name>.md and prints it: the frame the chat,
 * groups and discovery benches share.
 */
export async function runPerBackend<Results>(
  name: string,
  seconds: number,
  measure: (
    backend: Backend,
    schedule: RoundSchedule,
    seconds: number,
    nodeArgs: string[] | undefined,
  ) => Promise<Results>,
  report: (results: Partial<Record<Backend, Results>>, context: RunContext) => string,
): Promise<string> {
  const { backends, profile, compiled } = scenarioOptions();
  if (compiled) await buildService();
  const nodeArgs = await serviceNodeArgs(profile, compiled);
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, Results>> = {};
  for (const backend of backends) results[backend] = await measure(backend, schedule, seconds, nodeArgs);
  const text = report(results, {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    environment,
    code: codeLine(before, codeState()),
    minutes: (performance.now() - started) / 60_000,
    rounds: `${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each`,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile(`bench/results/${name}.md`, text);
  console.log(text);
  return text;
}
