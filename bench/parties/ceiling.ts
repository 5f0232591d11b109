import {
  DELETE_MEMBER_SQL,
  INSERT_MEMBER_SQL,
  JOIN_FACTS_SQL,
  LOCK_PARTY_SQL,
  PARTY_MEMBER_IDS_SQL,
  PARTY_ROSTER_SQL,
  USER_LOCK_PREFIX,
} from '../../src/modules/parties/parties.repository.js';
import { pgbenchSafeTimeKey, pgbenchUuid } from '../chat/ceiling.js';
import { withValues } from '../economy/ceiling.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import { JOIN_PARTIES, type PartiesSeed, pgbenchPartyUuid } from './seed.js';

/**
 * The pgbench ceiling of a join then a leave: the two transactions PartiesService.join and .leave
 * run for a member who does not lead an open party with room (src/modules/parties/parties.service.ts
 * and party-departures.ts): the user's own lock, the party's row lock, the join's facts, the
 * insert and the party's roster; then the row lock, the delete, the remaining members and the
 * roster. The statements are the repository's own texts (parties.repository.ts), their parameters
 * written in as SQL (the service binds its clock's time where this has now()). Client c is one
 * user and joins a random one of its own parties (c, c + 50, …), so no two clients share a party,
 * as no two connections of the service's load do. No event is published.
 */

/** pgbench takes `:user` in a literal for a variable: the lock's key prefix is bound instead. */
export const LOCK_PREFIX = { lock: USER_LOCK_PREFIX };

export function joinLeaveScript(prefix: string, seed: PartiesSeed): string {
  const me = pgbenchUuid(prefix, 'n');
  const party = pgbenchPartyUuid(prefix, 'p');
  // pgbenchSafeTimeKey splits one time key: the roster's, once per statement.
  const statement = (sql: string, values = [party, me, 'now()']) =>
    `${pgbenchSafeTimeKey(withValues(sql, values))};`;
  return `\\set n ${seed.ceilingJoiner} + :client_id
\\set p ${seed.ceilingParty} + :client_id + ${REST_CONNECTIONS} * random(0, ${JOIN_PARTIES / REST_CONNECTIONS - 1})
begin;
select pg_advisory_xact_lock(hashtextextended(:lock || ${me}, 0));
${statement(LOCK_PARTY_SQL)}
${statement(JOIN_FACTS_SQL)}
${statement(INSERT_MEMBER_SQL)}
${statement(PARTY_ROSTER_SQL)}
commit;
begin;
${statement(LOCK_PARTY_SQL)}
${statement(DELETE_MEMBER_SQL, [party, me, 'null'])}
${statement(PARTY_MEMBER_IDS_SQL)}
${statement(PARTY_ROSTER_SQL)}
commit`;
}
