import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { groupMemberSql } from '../groups/index.js';

/**
 * The SQL of world, room and group chat (the `messages` table of migration 0002, linked to worlds
 * and rooms by 0011 and to groups by 0022). A world's own messages have room_id null; a room's
 * carry both ids; a group's carry only group_id.
 */

export interface WorldMessageRow {
  id: string;
  world_id: string | null;
  room_id: string | null;
  group_id: string | null;
  sender_id: string | null;
  body: string;
  filtered: boolean;
  /**
   * created_at to the microsecond, as text (`timeKeySql`): the row's keyset position, and its time
   * (`timeOfKey`) without parsing a Date per row.
   */
  created_key: string;
}

type Key = readonly [timeKey: string, id: string] | undefined;

const COLUMNS = `id, world_id, room_id, group_id, sender_id, body, filtered, ${timeKeySql('created_at')} as created_key`;
const BEFORE = beforeTimeIdKey('created_at', 'id');

export async function insertWorldMessage(
  data: DataAccess,
  message: {
    id: string;
    worldId: string;
    roomId: string | null;
    senderId: string;
    body: string;
    filtered: boolean;
    at: Date;
  },
): Promise<WorldMessageRow> {
  const [row] = await executeBound<WorldMessageRow>(
    data,
    `insert into messages (id, world_id, room_id, sender_id, body, filtered, created_at)
     values ($1, $2, $3, $4, $5, $6, $7)
     returning ${COLUMNS}`,
    [
      message.id,
      message.worldId,
      message.roomId,
      message.senderId,
      message.body,
      message.filtered,
      message.at,
    ],
  );
  if (!row) throw new Error('insert returned no row');
  return row;
}

/**
 * A page of the world's own messages, newest first, after `before` in that order, from the index
 * of the world's own messages (messages_world_chat_history_idx, migration 0016).
 */
export function worldMessagesOf(
  data: DataAccess,
  worldId: string,
  page: { before: Key; limit: number },
): Promise<WorldMessageRow[]> {
  return executeBound<WorldMessageRow>(
    data,
    `select ${COLUMNS} from messages
     where world_id = $1 and room_id is null and ${BEFORE}
     order by created_at desc, id desc
     limit $4`,
    [worldId, ...timeIdKeyParams(page.before), page.limit],
  );
}

/** A page of the room's messages, newest first, from the room's history index. */
export function roomMessagesOf(
  data: DataAccess,
  roomId: string,
  page: { before: Key; limit: number },
): Promise<WorldMessageRow[]> {
  return executeBound<WorldMessageRow>(
    data,
    `select ${COLUMNS} from messages
     where room_id = $1 and ${BEFORE}
     order by created_at desc, id desc
     limit $4`,
    [roomId, ...timeIdKeyParams(page.before), page.limit],
  );
}

/**
 * Stores a group chat message when its sender is a member, in one statement (groups' exported
 * membership fragment); undefined when they are not (or the group is gone).
 */
export async function insertGroupMessage(
  data: DataAccess,
  message: { id: string; groupId: string; senderId: string; body: string; filtered: boolean; at: Date },
): Promise<WorldMessageRow | undefined> {
  const [row] = await executeBound<WorldMessageRow>(
    data,
    `insert into messages (id, group_id, sender_id, body, filtered, created_at)
     select $1, $2, $3, $4, $5, $6 where ${groupMemberSql('$2::uuid', '$3::uuid')}
     returning ${COLUMNS}`,
    [message.id, message.groupId, message.senderId, message.body, message.filtered, message.at],
  );
  return row;
}

/** A page of the group's messages, newest first, from the group's history index (migration 0022). */
export function groupMessagesOf(
  data: DataAccess,
  groupId: string,
  page: { before: Key; limit: number },
): Promise<WorldMessageRow[]> {
  return executeBound<WorldMessageRow>(
    data,
    `select ${COLUMNS} from messages
     where group_id = $1 and ${BEFORE}
     order by created_at desc, id desc
     limit $4`,
    [groupId, ...timeIdKeyParams(page.before), page.limit],
  );
}
