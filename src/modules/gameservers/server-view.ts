import type { GameServer } from '../../../protocol/gameservers.js';
import type { GameServerRow } from './gameservers.repository.js';

/**
 * The API's view of a server (`GET /api/servers/{id}`, and `gameserver.failed`'s `server`);
 * `reserved` is its live reservations made since its last report (none once it ended).
 */
export function serverView(row: GameServerRow, reserved = 0): GameServer {
  const iso = (date: Date | null) => (date ? date.toISOString() : null);
  return {
    server_id: row.id,
    world_id: row.world_id,
    status: row.status,
    address: row.address,
    error: row.error,
    players: row.players + reserved,
    max_players: row.max_players,
    backend: row.backend,
    access: row.access,
    owner_id: row.requested_by,
    created_at: row.created_at.toISOString(),
    ready_at: iso(row.ready_at),
    ended_at: iso(row.ended_at),
    ready_deadline_at: row.ready_deadline.toISOString(),
  };
}
