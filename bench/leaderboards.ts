import { measureLeaderboards } from './leaderboards/measure.js';
import { leaderboardsReport } from './leaderboards/report.js';
import { runPerBackend } from './scenario.js';

/**
 * Leaderboards: a board of 1,000,000 records (issue 51's "Measure"): the top page and the page
 * around a user in the middle, for one client and under 50, beside a bare Redis + `pg` script
 * doing the same reads, as loops and served by bare Fastify; submissions under 50 clients beside
 * the bare upsert plus ZADD, the same two ways; the rank
 * index's rebuild after a start. Usage: npm run bench -- leaderboards [--backends embedded,postgres]
 * [--seconds N] (N: the measured time per contender of the rounds, and of each one-client latency
 * run; default 10) [--profile DIR] (a V8 CPU profile of the service into DIR). Writes
 * bench/results/leaderboards.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('leaderboards', seconds, measureLeaderboards, leaderboardsReport);
}
