import { Migration } from '@mikro-orm/migrations';

/**
 * Friendships, follows and blocks. Each row belongs to both users: deleting either deletes it.
 * One friendship row per ordered (requester, addressee) pair; the service keeps a pair from
 * existing in both directions.
 */
export class Migration0007SocialGraph extends Migration {
  override up(): void {
    this.addSql(`
      create table friendships (
        requester_id uuid not null references users (id) on delete cascade,
        addressee_id uuid not null references users (id) on delete cascade,
        status friendship_status not null default 'pending',
        created_at timestamptz not null default now(),
        responded_at timestamptz,
        primary key (requester_id, addressee_id),
        constraint friendships_not_self check (requester_id <> addressee_id)
      )`);
    this.addSql('create index friendships_addressee_idx on friendships (addressee_id, status)');
    this.addSql(`
      create table follows (
        follower_id uuid not null references users (id) on delete cascade,
        followed_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        primary key (follower_id, followed_id),
        constraint follows_not_self check (follower_id <> followed_id)
      )`);
    this.addSql('create index follows_followed_idx on follows (followed_id)');
    this.addSql(`
      create table blocks (
        blocker_id uuid not null references users (id) on delete cascade,
        blocked_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        primary key (blocker_id, blocked_id),
        constraint blocks_not_self check (blocker_id <> blocked_id)
      )`);
    this.addSql('create index blocks_blocked_idx on blocks (blocked_id)');
  }
}
