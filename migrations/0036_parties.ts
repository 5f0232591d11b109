import { Migration } from '@mikro-orm/migrations';

/**
 * Parties, their members and invitations (src/modules/parties, docs/parties.md).
 *
 * - One party per user: a unique index on `party_members (user_id)`, so of two concurrent creates
 *   or joins by one user only one can commit, whatever the service checked before.
 * - The leader is one of the members: `(id, leader_id)` references the member row, checked at
 *   commit (a party and its first member are inserted in one transaction, and a leaving leader's
 *   successor is set before it commits). A party's deletion takes its members and invitations.
 * - `offline_since`: when a sweep first saw the member offline (never before the join), null while
 *   they are online; the sweeps remove members offline for PARTY_OFFLINE_GRACE_SECONDS. A partial
 *   index finds the due ones.
 * - An invitation is one row per party and invitee, renewed in place; expired rows are ignored by
 *   the rules and pruned by the sweeps (an index on `expires_at`). The inviter's account deletion
 *   keeps the invitation; the invitee's takes it, as it takes the member row (but the service
 *   removes a deleted account's member first, as a leave, so that leadership passes on).
 */
export class Migration0036Parties extends Migration {
  override up(): void {
    this.addSql(`
      create table parties (
        id uuid primary key,
        leader_id uuid not null,
        open boolean not null default false,
        max_size smallint not null constraint parties_max_size check (max_size between 2 and 16),
        created_at timestamptz not null
      )`);
    this.addSql(`
      create table party_members (
        party_id uuid not null references parties (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        joined_at timestamptz not null,
        offline_since timestamptz,
        primary key (party_id, user_id)
      )`);
    this.addSql('create unique index party_members_one_party on party_members (user_id)');
    this.addSql(
      'create index party_members_offline_idx on party_members (offline_since) where offline_since is not null',
    );
    this.addSql(`
      alter table parties add constraint parties_leader_is_member foreign key (id, leader_id)
        references party_members (party_id, user_id) deferrable initially deferred`);
    this.addSql(`
      create table party_invites (
        party_id uuid not null references parties (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        invited_by uuid references users (id) on delete set null,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        primary key (party_id, user_id)
      )`);
    this.addSql('create index party_invites_user_idx on party_invites (user_id)');
    this.addSql(
      'create index party_invites_inviter_idx on party_invites (invited_by) where invited_by is not null',
    );
    this.addSql('create index party_invites_expiry_idx on party_invites (expires_at)');
  }
}
