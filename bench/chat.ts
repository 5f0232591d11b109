import { measureChat } from './chat/measure.js';
import { chatReport } from './chat/report.js';
import { POOL_SIZE } from './datapath/measure.js';
import { runPerBackend } from './scenario.js';

/**
 * Direct messages: end-to-end latency across two instances at 1,000 messages/s, send throughput
 * (socket and REST) beside a pgbench ceiling of the same statements, and the recovery of 1,000
 * missed events. Usage: npm run bench -- chat [--backends embedded,postgres] [--seconds N] (N: the
 * latency window and the measured time per contender of the throughput rounds, default 10; the
 * embedded backend runs the recovery only) [--profile DIR] (a V8 CPU profile of each atrium
 * instance into DIR). Writes bench/results/chat.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('chat', seconds, measureChat, (results, context) =>
    chatReport(results, { ...context, poolSize: POOL_SIZE }),
  );
}
