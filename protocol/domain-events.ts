import type { dmSend } from './chat.js';
import type { payoutsCreate } from './economy.js';
import type { gameServersGet } from './gameservers.js';
import type { groupsCreate } from './groups.js';
import type { purchasesGet } from './marketplace.js';
import type { Report } from './moderation.js';
import type { OutputOf } from './operation.js';
import type { tournamentsRecord } from './tournaments.js';

/**
 * The domain events server extensions subscribe to (`api.on`): each recorded in the transaction
 * that commits its change, and handled after the commit, at least once. An event's `data` is its
 * entry in DomainEventData.
 */
export const domainEventTypes = [
  'user.registered',
  'user.deleted',
  'group.created',
  'report.created',
  'economy.purchase.completed',
  'economy.payout.requested',
  'gameserver.failed',
  'group.member.joined',
  'dm.message',
  'leaderboard.reset',
  'tournament.ended',
] as const;

export type DomainEventType = (typeof domainEventTypes)[number];

export interface DomainEventData {
  /** An account was registered. */
  'user.registered': { user_id: string; username: string; created_at: string };
  /** An account was deleted (its data went with it). */
  'user.deleted': { user_id: string };
  /** A group was created, as `POST /api/groups` answers it. */
  'group.created': { group: OutputOf<typeof groupsCreate> };
  /** A chat message was reported: the report as its reporter sees it, its reporter, and the message then. */
  'report.created': {
    report: Report & { reporter_id: string };
    message: { id: string; sender_id: string | null; body: string; created_at: string };
  };
  /** A purchase committed; the purchase as `GET /api/economy/purchases/{id}` answers it. */
  'economy.purchase.completed': { purchase: OutputOf<typeof purchasesGet> };
  /** A payout was requested, as `POST /api/economy/payouts` answers it. */
  'economy.payout.requested': { payout: OutputOf<typeof payoutsCreate> };
  /** A game server spawn became `failed` (deadline, crash, start error), as `GET /api/servers/{id}` answers it. */
  'gameserver.failed': { server: OutputOf<typeof gameServersGet> };
  /** A user joined an open group, or their request to join was approved. */
  'group.member.joined': { group_id: string; user_id: string };
  /** A direct message was stored (over either transport), as `dm.send` answers it. */
  'dm.message': { message: OutputOf<typeof dmSend> };
  /** A board's period ended holding records: its standings are final (`?period=previous` reads them). */
  'leaderboard.reset': { leaderboard_id: string; period_started_at: string; period_ended_at: string };
  /** A tournament reached its end_at: its size then and its top 100 records, in rank order. */
  'tournament.ended': {
    tournament_id: string;
    start_at: string;
    end_at: string;
    size: number;
    standings: OutputOf<typeof tournamentsRecord>[];
  };
}
