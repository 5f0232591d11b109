import { GROUP_COLUMNS, MEMBER_COLUMNS } from '../../src/modules/groups/groups.repository.js';
import { pgbenchSafeTimeKey, pgbenchUuid } from '../chat/ceiling.js';
import { restContender } from '../realtime/rest-load.js';
import type { Atrium } from '../realtime/servers.js';
import { JOINER_SEQUENCE } from './seed.js';

/**
 * Measurement 3: joins of one open group, 50 connections (REST_CONNECTIONS), each request a fresh
 * user (`POST /api/groups/{id}/members`), beside pgbench running the transaction RosterService.join
 * runs for an open group (src/modules/groups/roster.service.ts): the joiner's advisory lock, the
 * group row for update, the joiner's role, the pending request's delete, the joiner's membership
 * count, and the insert with the member's columns. Its joiners come from a sequence, read before
 * the transaction (one statement more than the service runs).
 */

export function joinRequests(atrium: Atrium, groupId: string, tokens: readonly string[]) {
  let next = 0;
  return restContender(
    'POST members (join)',
    `http://127.0.0.1:${atrium.httpPort}/api/groups/${groupId}/members`,
    atrium.pid,
    {},
    {
      method: 'POST',
      // Past the seeded joiners, the requests are 409s and count as errors.
      setup: (request) => ({
        ...request,
        headers: { ...request.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` },
      }),
    },
  );
}

/** pgbench takes `:member` in a literal for a variable: the lock's key prefix is bound instead. */
export const JOIN_LOCK_PREFIX = { lock: 'groups:member:' };

export function joinScript(prefix: string): string {
  const me = pgbenchUuid(prefix, 'n');
  return pgbenchSafeTimeKey(`select nextval('${JOINER_SEQUENCE}') as n \\gset
begin;
select pg_advisory_xact_lock(hashtextextended(:lock || ${me}, 0));
select ${GROUP_COLUMNS} from groups where id = :g::uuid for update;
select user_id, role::text as role from group_members where group_id = :g::uuid and user_id = any(array[${me}]);
delete from group_join_requests where group_id = :g::uuid and user_id = ${me} returning user_id;
select ((select count(*) from group_members where user_id = ${me})
      + (select count(*) from group_join_requests where user_id = ${me}))::int as memberships;
insert into group_members (group_id, user_id, role, joined_at) values (:g::uuid, ${me}, 'member', now())
  returning ${MEMBER_COLUMNS};
commit`);
}
