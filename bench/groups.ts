import { measureGroups } from './groups/measure.js';
import { groupsReport } from './groups/report.js';
import { runPerBackend } from './scenario.js';

/**
 * Groups: roster pages of a 10,000-member group and joins of one open group beside pgbench, and
 * group chat latency with 500 members online on two instances. Usage: npm run bench -- groups
 * [--backends embedded,postgres] [--seconds N] (N: the chat latency window and the measured time
 * per contender of the rounds, default 10; the embedded backend runs no chat) [--profile DIR]
 * (a V8 CPU profile of instance A into DIR). Writes bench/results/groups.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('groups', seconds, measureGroups, groupsReport);
}
