import { timeKeySql } from '../../src/platform/cursor.js';

/**
 * The pgbench ceiling of a direct message: the statements ChatService.send runs for one message
 * (src/modules/chat/chat.service.ts), copied from their sources, with the sender and peer drawn
 * at random from the same pairs the service is loaded with (user n writes to user n % users + 1).
 * Ids are bound as numbers and spelled into the run's uuids by the statements themselves
 * (pgbench variables are numbers): users are seeded with `userIdOf`.
 */

/** User n's id (n from 1): the run's prefix and n, so SQL can derive it from the number. */
export const userIdOf = (prefix: string) => (n: number) =>
  `${prefix}-0000-7000-8000-${String(n).padStart(12, '0')}`;

export function dmSendScript(users: number, prefix: string): string {
  // pgbench takes every `:name` for a variable, string literals included: split the format's `:MI:SS`.
  const createdKey = timeKeySql('created_at').replace(':MI:SS', ":' || 'MI:' || 'SS");
  const text = (variable: string) => `('${prefix}-0000-7000-8000-' || lpad(:${variable}::text, 12, '0'))`;
  const [me, peer, userA, userB] = ['me', 'peer', 'a', 'b'].map((v) => `${text(v)}::uuid`);
  return `\\set me random(1, ${users})
\\set peer (:me % ${users}) + 1
\\set a least(:me, :peer)
\\set b greatest(:me, :peer)
-- relationsOf (src/modules/social/relations.ts): friendships and blocks in one statement
select case when requester_id = ${me} then addressee_id else requester_id end as other, 'friends' as flag
  from friendships
  where status = 'accepted'
    and ((requester_id = ${me} and addressee_id = any(array[${peer}])) or (addressee_id = ${me} and requester_id = any(array[${peer}])))
union all
select case when blocker_id = ${me} then blocked_id else blocker_id end, 'blocked'
  from blocks
  where (blocker_id = ${me} and blocked_id = any(array[${peer}])) or (blocked_id = ${me} and blocker_id = any(array[${peer}]));
-- privacyOf (src/modules/profiles/profiles.service.ts)
select user_id, profile_visibility, presence_visibility, dm_policy, favorites_visibility
  from profiles where user_id = any(array[${peer}]);
-- insertMessage (src/modules/chat/dm.repository.ts), no transaction; the pairs' conversations exist after the warm-up
with target as (
  update conversations set last_message_at = greatest(last_message_at, now())
  where user_a_id = ${userA} and user_b_id = ${userB} and not blocked
  returning id
)
insert into messages (id, conversation_id, sender_id, body, filtered, created_at)
select gen_random_uuid(), target.id, ${me}, :body::text, false, now() from target
returning id, conversation_id, sender_id, body, filtered, created_at, ${createdKey} as created_key`;
}
