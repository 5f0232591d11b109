import { Migration } from '@mikro-orm/migrations';

/**
 * The parties' offline sweep (docs/parties.md, "Offline members") reads the members whose
 * `offline_since` is set, in pages ordered by `(offline_since, user_id)`: the partial index of
 * 0036 on `offline_since` alone becomes one on both, so each page starts where the last ended in
 * the index and reads only those members, however many members are online.
 */
export class Migration0039PartyOfflineIndex extends Migration {
  override up(): void {
    this.addSql(
      `create index party_members_offline_since_idx on party_members (offline_since, user_id)
       where offline_since is not null`,
    );
    this.addSql('drop index party_members_offline_idx');
  }
}
