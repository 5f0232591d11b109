import { timeKeySql } from '../../src/platform/cursor.js';

/**
 * The pgbench ceiling of a direct message: the statement ChatService.send runs for one message
 * (src/modules/chat/chat.service.ts), copied from its source, with the sender and peer drawn
 * at random from the same pairs the service is loaded with (user n writes to user n % users + 1).
 * Ids are bound as numbers and spelled into the run's uuids by the statement itself
 * (pgbench variables are numbers): users are seeded with `userIdOf`.
 */

/** User n's id (n from 1): the run's prefix and n, so SQL can derive it from the number. */
export const userIdOf = (prefix: string) => (n: number) =>
  `${prefix}-0000-7000-8000-${String(n).padStart(12, '0')}`;

/** The uuid of the user a pgbench variable numbers, spelled in SQL as `userIdOf` spells it. */
export const pgbenchUuid = (prefix: string, variable: string) =>
  `('${prefix}-0000-7000-8000-' || lpad(:${variable}::text, 12, '0'))::uuid`;

/** pgbench takes every `:name` for a variable, string literals included: splits timeKeySql's `:MI:SS`. */
export const pgbenchSafeTimeKey = (sql: string) => sql.replace(':MI:SS', ":' || 'MI:' || 'SS");

export function dmSendScript(users: number, prefix: string): string {
  const createdKey = pgbenchSafeTimeKey(timeKeySql('created_at'));
  const [me, peer, userA, userB] = ['me', 'peer', 'a', 'b'].map((v) => pgbenchUuid(prefix, v));
  return `\\set me random(1, ${users})
\\set peer (:me % ${users}) + 1
\\set a least(:me, :peer)
\\set b greatest(:me, :peer)
-- insertMessage (src/modules/chat/dm.repository.ts), no transaction; the pairs' conversations exist
-- after the warm-up. It reads the facts that may refuse the message (friendship, blocks either way,
-- the peer's dm_policy) and writes only when the policy admits the sender.
with facts as (
  select exists (select 1 from friendships where status = 'accepted'
           and ((requester_id = ${me} and addressee_id = ${peer}) or (requester_id = ${peer} and addressee_id = ${me}))) as friends,
         exists (select 1 from blocks
           where (blocker_id = ${me} and blocked_id = ${peer}) or (blocker_id = ${peer} and blocked_id = ${me})) as blocked,
         coalesce((select dm_policy::text from profiles where user_id = ${peer}), 'everyone') as dm_policy
), target as (
  update conversations set last_message_at = greatest(last_message_at, now()),
    last_message_a_at = case when ${me} = user_a_id then greatest(last_message_a_at, now()) else last_message_a_at end,
    last_message_b_at = case when ${me} = user_b_id then greatest(last_message_b_at, now()) else last_message_b_at end
  where user_a_id = ${userA} and user_b_id = ${userB} and not conversations.blocked
    and (select f.dm_policy = any(case when f.friends then array['everyone', 'friends'] else array['everyone'] end) from facts f)
  returning id
), inserted as (
  insert into messages (id, conversation_id, sender_id, body, filtered, created_at)
  select gen_random_uuid(), target.id, ${me}, :body::text, false, now() from target
  returning id, conversation_id, sender_id, body, filtered, created_at, ${createdKey} as created_key
)
select facts.friends, facts.blocked, facts.dm_policy, inserted.* from facts left join inserted on true`;
}
