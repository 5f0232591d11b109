import { Migration } from '@mikro-orm/migrations';

/**
 * The node that supervises a local game server's process (docs/gameservers.md, "When a node
 * dies"): its presence node id, so that when its node lease lapses a surviving node ends the
 * server. Null for Agones servers (Kubernetes supervises them, not a node) and for the servers
 * recorded before this migration.
 */
export class Migration0028GameServerNodes extends Migration {
  override up(): void {
    this.addSql('alter table game_servers add column node_id uuid');
    // Every node's reconcile looks up the nodes of the live servers.
    this.addSql(
      `create index game_servers_live_by_node on game_servers (node_id) where status in ('starting', 'ready') and node_id is not null`,
    );
  }
}
