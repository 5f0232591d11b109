import { Migration0001Initial } from './0001_initial.js';
import { Migration0002Chat } from './0002_chat.js';
import { Migration0003SessionRevocations } from './0003_session_revocations.js';
import { Migration0004AvatarLoadouts } from './0004_avatar_loadouts.js';
import { Migration0005WorldContent } from './0005_world_content.js';
import { Migration0006PresenceColumns } from './0006_presence_columns.js';
import { Migration0007SocialGraph } from './0007_social_graph.js';
import { Migration0008GameServers } from './0008_game_servers.js';
import { Migration0009WorldStreamsAndHistory } from './0009_world_streams_and_history.js';
import { Migration0010Profiles } from './0010_profiles.js';
import { Migration0011ConversationLastRead } from './0011_conversation_last_read.js';
import { Migration0012Groups } from './0012_groups.js';
import { Migration0013EconomyCatalog } from './0013_economy_catalog.js';
import { Migration0014EconomyLedger } from './0014_economy_ledger.js';
import { Migration0015WorldDiscovery } from './0015_world_discovery.js';
import { Migration0016WorldChatHistory } from './0016_world_chat_history.js';
import { Migration0017ConversationBlocked } from './0017_conversation_blocked.js';
import { Migration0018Discovery } from './0018_discovery.js';
import { Migration0019WorldContentLimits } from './0019_world_content_limits.js';
import { Migration0020GameServerReservations } from './0020_game_server_reservations.js';
import { Migration0021ConversationSides } from './0021_conversation_sides.js';
import { Migration0022GroupChat } from './0022_group_chat.js';
import { Migration0023AuditLog } from './0023_audit_log.js';
import { Migration0024AccountSuspensions } from './0024_account_suspensions.js';
import { Migration0025AdminIndexes } from './0025_admin_indexes.js';
import { Migration0026DiscoveryRankFilters } from './0026_discovery_rank_filters.js';
import { Migration0027WorldStoredBytes } from './0027_world_stored_bytes.js';
import { Migration0028GameServerNodes } from './0028_game_server_nodes.js';
import { Migration0029EconomySellerAccounts } from './0029_economy_seller_accounts.js';
import { Migration0030ExtensionStorage } from './0030_extension_storage.js';
import { Migration0031Outbox } from './0031_outbox.js';
import { Migration0032AuditExtensionActor } from './0032_audit_extension_actor.js';
import { Migration0033Leaderboards } from './0033_leaderboards.js';
import { Migration0034Notifications } from './0034_notifications.js';
import { Migration0035Webhooks } from './0035_webhooks.js';
import { Migration0036Parties } from './0036_parties.js';
import { Migration0037InstanceAccess } from './0037_instance_access.js';
import { Migration0038PartyChat } from './0038_party_chat.js';
import { Migration0039NotificationInboxes } from './0039_notification_inboxes.js';

/**
 * Migrations in the order they apply. The name is what the migrations table records, so a name
 * never changes once released; numbers keep the slots the specification assigns (0004 avatar
 * loadouts, 0005 world content, ...) even while some are not written yet.
 */
export const migrationsList = [
  { name: '0001_initial', class: Migration0001Initial },
  { name: '0002_chat', class: Migration0002Chat },
  { name: '0003_session_revocations', class: Migration0003SessionRevocations },
  { name: '0004_avatar_loadouts', class: Migration0004AvatarLoadouts },
  { name: '0005_world_content', class: Migration0005WorldContent },
  { name: '0006_presence_columns', class: Migration0006PresenceColumns },
  { name: '0007_social_graph', class: Migration0007SocialGraph },
  { name: '0008_game_servers', class: Migration0008GameServers },
  { name: '0009_world_streams_and_history', class: Migration0009WorldStreamsAndHistory },
  { name: '0010_profiles', class: Migration0010Profiles },
  { name: '0011_conversation_last_read', class: Migration0011ConversationLastRead },
  { name: '0012_groups', class: Migration0012Groups },
  { name: '0013_economy_catalog', class: Migration0013EconomyCatalog },
  { name: '0014_economy_ledger', class: Migration0014EconomyLedger },
  { name: '0015_world_discovery', class: Migration0015WorldDiscovery },
  { name: '0016_world_chat_history', class: Migration0016WorldChatHistory },
  { name: '0017_conversation_blocked', class: Migration0017ConversationBlocked },
  { name: '0018_discovery', class: Migration0018Discovery },
  { name: '0019_world_content_limits', class: Migration0019WorldContentLimits },
  { name: '0020_game_server_reservations', class: Migration0020GameServerReservations },
  { name: '0021_conversation_sides', class: Migration0021ConversationSides },
  { name: '0022_group_chat', class: Migration0022GroupChat },
  { name: '0023_audit_log', class: Migration0023AuditLog },
  { name: '0024_account_suspensions', class: Migration0024AccountSuspensions },
  { name: '0025_admin_indexes', class: Migration0025AdminIndexes },
  { name: '0026_discovery_rank_filters', class: Migration0026DiscoveryRankFilters },
  { name: '0027_world_stored_bytes', class: Migration0027WorldStoredBytes },
  { name: '0028_game_server_nodes', class: Migration0028GameServerNodes },
  { name: '0029_economy_seller_accounts', class: Migration0029EconomySellerAccounts },
  { name: '0030_extension_storage', class: Migration0030ExtensionStorage },
  { name: '0031_outbox', class: Migration0031Outbox },
  { name: '0032_audit_extension_actor', class: Migration0032AuditExtensionActor },
  { name: '0033_leaderboards', class: Migration0033Leaderboards },
  { name: '0034_notifications', class: Migration0034Notifications },
  { name: '0035_webhooks', class: Migration0035Webhooks },
  { name: '0036_parties', class: Migration0036Parties },
  { name: '0037_instance_access', class: Migration0037InstanceAccess },
  { name: '0038_party_chat', class: Migration0038PartyChat },
  { name: '0039_notification_inboxes', class: Migration0039NotificationInboxes },
];
