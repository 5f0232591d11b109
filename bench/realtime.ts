import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { codeLine, codeState } from './realtime/code-state.js';
import { optionsFromArgv } from './realtime/options.js';
import { barePhase, clusterPhase, singlePhase } from './realtime/phases.js';
import { progress } from './realtime/progress.js';
import { buildReport } from './realtime/report.js';
import { roundSchedule } from './realtime/rounds.js';

/**
 * Realtime benchmarks: idle authenticated sockets held by one instance and by two instances
 * sharing Redis (RSS growth per connection, beside a bare uWebSockets.js server holding the same
 * sockets), presence heartbeat frames/s through the gateway beside a bare uWS msgpack echo, and
 * REST heartbeat req/s beside a bare Fastify route, each in interleaved rounds with its bare peer.
 * Usage and phases: bench/realtime/options.ts. `--seconds` is the measured time per server and load.
 * Writes bench/results/realtime.md. The modules are in bench/realtime/.
 */
export async function run(seconds: number): Promise<string> {
  const options = optionsFromArgv();
  const schedule = roundSchedule(seconds);
  const codeBefore = codeState();
  const n = options.connections;
  progress(
    `Node ${process.version}, ${availableParallelism()} cores, N = ${n} sockets per instance, ` +
      `throughput in ${schedule.rounds} rounds of ${schedule.windowSeconds} s windows, phases: ${[...options.phases].join(', ')}`,
  );
  const single = options.phases.has('single') ? await singlePhase(n, schedule) : undefined;
  const bare = options.phases.has('bare') ? await barePhase(n) : undefined;
  const cluster = options.phases.has('cluster') ? await clusterPhase(n, schedule) : undefined;
  const report = buildReport(options, seconds, schedule, codeLine(codeBefore, codeState()), {
    single,
    bare,
    cluster,
  });
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/realtime.md', report);
  console.log(report);
  return report;
}
