import type { EntityManager } from '@mikro-orm/postgresql';
import { toUuidArray } from '../../platform/ids.js';

export interface Relation {
  /** An accepted friendship exists in either direction. */
  friends: boolean;
  /** Either user blocked the other. */
  blocked: boolean;
}

/**
 * How `viewerId` relates to each of `otherIds`, in two indexed queries for the whole batch.
 * Privacy rules (presence visibility, DM policy) are decided from this.
 */
export async function relationsOf(
  em: EntityManager,
  viewerId: string,
  otherIds: readonly string[],
): Promise<Map<string, Relation>> {
  const relations = new Map<string, Relation>(otherIds.map((id) => [id, { friends: false, blocked: false }]));
  if (otherIds.length === 0) return relations;
  const ids = toUuidArray(otherIds);
  const connection = em.getConnection();
  const [friends, blocks] = await Promise.all([
    connection.execute(
      `select case when requester_id = ? then addressee_id else requester_id end as other
       from friendships
       where status = 'accepted'
         and ((requester_id = ? and addressee_id = any(?::uuid[])) or (addressee_id = ? and requester_id = any(?::uuid[])))`,
      [viewerId, viewerId, ids, viewerId, ids],
    ) as Promise<{ other: string }[]>,
    connection.execute(
      `select case when blocker_id = ? then blocked_id else blocker_id end as other
       from blocks
       where (blocker_id = ? and blocked_id = any(?::uuid[])) or (blocked_id = ? and blocker_id = any(?::uuid[]))`,
      [viewerId, viewerId, ids, viewerId, ids],
    ) as Promise<{ other: string }[]>,
  ]);
  for (const row of friends) setFlag(relations, row.other, 'friends');
  for (const row of blocks) setFlag(relations, row.other, 'blocked');
  return relations;
}

function setFlag(relations: Map<string, Relation>, id: string, flag: keyof Relation) {
  const relation = relations.get(id);
  if (relation) relation[flag] = true;
}
