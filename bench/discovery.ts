import { measureDiscovery } from './discovery/measure.js';
import { discoveryReport } from './discovery/report.js';
import { runPerBackend } from './scenario.js';

/**
 * Discovery: search pages of 100,000 public worlds (text, tag and each sort) beside pgbench
 * running the same statements, joins of one hot world beside pgbench running the join transaction
 * with and without the visit, and the fold and ranking jobs' durations. Usage: npm run bench --
 * discovery [--backends embedded,postgres] [--seconds N] (N: the measured time per contender of
 * the rounds, and twice each one-client latency run; default 10) [--profile DIR] (a V8 CPU profile
 * of the service into DIR). Writes bench/results/discovery.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('discovery', seconds, measureDiscovery, discoveryReport);
}
