import { measureParties } from './parties/measure.js';
import { partiesReport } from './parties/report.js';
import { runPerBackend } from './scenario.js';

/**
 * Parties: joins and leaves of open parties from one client and from 50 beside pgbench running the
 * service's statements, `party.updated` from a member's join or leave to the other members'
 * sockets on one instance and (Postgres + Redis) across two, and (Postgres + Redis) a party's
 * placement of 8 on a game server beside a plain join. Usage: npm run bench -- parties [--backends
 * embedded,postgres] [--seconds N] (N: the one-client, fan-out and placement windows, and the
 * measured time per contender of the rounds, default 10) [--profile DIR] (a V8 CPU profile of
 * instance A into DIR). Writes bench/results/parties.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('parties', seconds, measureParties, partiesReport);
}
