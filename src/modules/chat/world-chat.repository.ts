import type { EntityManager } from '@mikro-orm/postgresql';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import { executeBound } from '../../platform/db.js';

/**
 * The SQL of world and room chat (the `messages` table of migration 0002, linked to worlds and
 * rooms by 0011). A world's own messages have room_id null; a room's carry both ids.
 */

export interface WorldMessageRow {
  id: string;
  world_id: string;
  room_id: string | null;
  sender_id: string | null;
  body: string;
  filtered: boolean;
  created_at: Date;
  /** The row's keyset position: created_at to the microsecond. */
  created_key: string;
}

type Key = readonly [timeKey: string, id: string] | undefined;

const COLUMNS = `id, world_id, room_id, sender_id, body, filtered, created_at, ${timeKeySql('created_at')} as created_key`;
const BEFORE = beforeTimeIdKey('created_at', 'id');

export async function insertWorldMessage(
  em: EntityManager,
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
    em,
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
  em: EntityManager,
  worldId: string,
  page: { before: Key; limit: number },
): Promise<WorldMessageRow[]> {
  return executeBound<WorldMessageRow>(
    em,
    `select ${COLUMNS} from messages
     where world_id = $1 and room_id is null and ${BEFORE}
     order by created_at desc, id desc
     limit $4`,
    [worldId, ...timeIdKeyParams(page.before), page.limit],
  );
}

/** A page of the room's messages, newest first, from the room's history index. */
export function roomMessagesOf(
  em: EntityManager,
  roomId: string,
  page: { before: Key; limit: number },
): Promise<WorldMessageRow[]> {
  return executeBound<WorldMessageRow>(
    em,
    `select ${COLUMNS} from messages
     where room_id = $1 and ${BEFORE}
     order by created_at desc, id desc
     limit $4`,
    [roomId, ...timeIdKeyParams(page.before), page.limit],
  );
}
