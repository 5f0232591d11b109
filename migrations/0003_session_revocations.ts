import { Migration } from '@mikro-orm/migrations';

/**
 * Revoked sessions of the last access-token lifetime. Their marks live in the KV store, which
 * may lose them (an embedded restart, a Redis without persistence); this table is what they are
 * rebuilt from. It has no foreign key on purpose: deleting an account deletes its sessions, and
 * the revocation must outlive them for as long as their access tokens could.
 */
export class Migration0003SessionRevocations extends Migration {
  override up(): void {
    this.addSql(`
      create table session_revocations (
        session_id uuid primary key,
        revoked_at timestamptz not null
      )`);
    this.addSql('create index session_revocations_revoked_at_idx on session_revocations (revoked_at)');
  }
}
