import type { EventPayloads } from '../../../protocol/frames.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';
import type { Logger } from '../../platform/log.js';

/**
 * The `party.follow` a party placement owes its members (migration 0040), kept in the database
 * with the placement, so that it reaches them whichever node sees the server ready, and although
 * the node of the leader's request died. Each row is sent by whoever takes it (a delete), so once:
 * - the statement that marks the server ready takes its rows (applyReport), on the node that
 *   hears of it (the server's report through the internal API, or the Agones watch);
 * - the leader's request takes what is left once it answers (a server ready already, or one
 *   that became ready before the placement committed);
 * - each node's reconcile takes the rows of servers no longer starting, sending those of ready
 *   ones (a leader's node that died between those two) and dropping those of ended ones.
 */

/** A follow taken: who goes, with which party, to which server of which world. */
export interface TakenFollow {
  user_id: string;
  party_id: string;
  server_id: string;
  world_id: string;
}

/** The followers of a placement (its members but the leader), in the placement's transaction. */
export async function recordFollows(
  tx: DataAccess,
  placement: { serverId: string; partyId: string; userIds: readonly string[] },
): Promise<void> {
  if (placement.userIds.length === 0) return;
  await executeBound(
    tx,
    `insert into game_server_party_follows (server_id, user_id, party_id)
     select $1, user_id, $3 from unnest($2::uuid[]) as user_id
     on conflict (server_id, user_id) do nothing`,
    [placement.serverId, toUuidArray(placement.userIds), placement.partyId],
  );
}

/**
 * SQL, for a statement that makes servers ready (`readyCte` naming the rows it returned, with
 * `id`, `world_id` and `status`), of a CTE `followed` that takes the follows of those now ready.
 */
export const takeFollowsSql = (readyCte: string) => `followed as (
       delete from game_server_party_follows f using ${readyCte} r
       where f.server_id = r.id and r.status = 'ready'
       returning f.user_id::text, f.party_id::text, r.id::text as server_id, r.world_id::text)`;

/**
 * Takes the follows of `serverId`, or of every server (null), once it is no longer starting:
 * answers those of ready servers, to send, and drops those of ended ones.
 */
export async function takeSettledFollows(data: DataAccess, serverId: string | null): Promise<TakenFollow[]> {
  const rows = await executeBound<TakenFollow & { ready: boolean }>(
    data,
    `delete from game_server_party_follows f using game_servers s
     where s.id = f.server_id and s.status <> 'starting' and ($1::uuid is null or s.id = $1::uuid)
     returning f.user_id::text, f.party_id::text, s.id::text as server_id, s.world_id::text,
       s.status = 'ready' as ready`,
    [serverId],
  );
  return rows.filter((row) => row.ready).map(({ ready: _ready, ...follow }) => follow);
}

/** Sends the follows taken, one event per party and server to its members' own topics. */
export async function sendFollows(
  bus: EventBus,
  log: Pick<Logger, 'warn'>,
  follows: readonly TakenFollow[],
): Promise<void> {
  const byPlacement = new Map<string, TakenFollow[]>();
  for (const follow of follows) {
    const key = `${follow.party_id}:${follow.server_id}`;
    byPlacement.set(key, [...(byPlacement.get(key) ?? []), follow]);
  }
  await Promise.all(
    [...byPlacement.values()].map((group) => {
      const [{ party_id, world_id, server_id }] = group as [TakenFollow];
      const d: EventPayloads['party.follow'] = { party_id, world_id, server_id };
      return bus.publishCommitted(
        group.map((follow) => userTopic(follow.user_id)),
        { t: 'party.follow', d },
        log,
      );
    }),
  );
}
