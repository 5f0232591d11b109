import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/**
 * What other modules may read and do of a single message of any kind (moderation's reports): its
 * audience, its columns for their own statements, and its deletion.
 */

/** A message with what decides who may see it: its conversation's pair, its world, its group or its party. */
export interface MessageTargetRow {
  sender_id: string | null;
  world_id: string | null;
  group_id: string | null;
  party_id: string | null;
  user_a_id: string | null;
  user_b_id: string | null;
}

export async function messageTarget(
  data: DataAccess,
  messageId: string,
): Promise<MessageTargetRow | undefined> {
  const [row] = await executeBound<MessageTargetRow>(
    data,
    `select m.sender_id, m.world_id, m.group_id, m.party_id, c.user_a_id, c.user_b_id
     from messages m left join conversations c on c.id = m.conversation_id
     where m.id = $1`,
    [messageId],
  );
  return row;
}

/**
 * SQL: a subquery of at most one row, the message `messageIdSql` names as it stands now (sender_id,
 * body, created_at, conversation_id, world_id, room_id, group_id, party_id); none once it was deleted. For
 * other modules' statements that show a message beside their rows, as a `left join lateral`.
 */
export const messageSql = (messageIdSql: string) =>
  `(select sender_id, body, created_at, conversation_id, world_id, room_id, group_id, party_id
    from messages where id = ${messageIdSql})`;

/** Deletes a message; rows of other modules that reference it keep theirs as their foreign key says. */
export async function deleteMessage(data: DataAccess, messageId: string): Promise<void> {
  await executeBound(data, 'delete from messages where id = $1', [messageId]);
}
