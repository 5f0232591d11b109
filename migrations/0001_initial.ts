import { Migration } from '@mikro-orm/migrations';

/**
 * Every enumeration type of the service, created once here so later migrations only reference
 * them, plus the accounts and session tables. No date of birth is stored anywhere: the 18+ gate
 * is a confirmation recorded as a timestamp.
 */
export class Migration0001Initial extends Migration {
  override up(): void {
    this.addSql(`create type user_role as enum ('user', 'moderator', 'admin')`);
    this.addSql(`create type world_visibility as enum ('public', 'unlisted', 'private')`);
    this.addSql(
      `create type asset_type as enum ('avatar_body', 'avatar_item', 'clothing', 'accessory', 'emote', 'model', 'texture', 'audio', 'world_template')`,
    );
    // Privacy settings: who may see a profile or favorites, and who may see presence or send DMs.
    this.addSql(`create type profile_visibility as enum ('public', 'friends', 'private')`);
    this.addSql(`create type audience as enum ('everyone', 'friends', 'nobody')`);
    this.addSql(`create type friendship_status as enum ('pending', 'accepted')`);
    this.addSql(`create type group_role as enum ('owner', 'admin', 'member')`);
    this.addSql(`create type report_state as enum ('open', 'resolved', 'dismissed')`);
    this.addSql(`create type game_server_status as enum ('starting', 'ready', 'failed', 'stopped')`);
    this.addSql(`create type listing_state as enum ('active', 'sold', 'cancelled')`);
    this.addSql(`create type purchase_state as enum ('completed', 'refunded')`);
    this.addSql(
      `create type ledger_entry_kind as enum ('grant', 'purchase', 'sale', 'fee', 'refund', 'payout', 'adjustment')`,
    );
    this.addSql(`create type payout_state as enum ('requested', 'approved', 'rejected', 'paid')`);

    this.addSql(`
      create table users (
        id uuid primary key,
        username text not null constraint users_username_format check (username ~ '^[A-Za-z0-9_]{3,32}$'),
        email text constraint users_email_length check (char_length(email) <= 254),
        password_hash text not null,
        roles user_role[] not null default '{user}',
        terms_accepted_at timestamptz not null,
        adult_confirmed_at timestamptz not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    // Uniqueness on the folded name is enforced by the index itself, so two concurrent
    // registrations of "Ada" and "ada" cannot both succeed.
    this.addSql('create unique index users_username_folded_key on users (lower(username))');
    this.addSql('create unique index users_email_folded_key on users (lower(email)) where email is not null');

    // A session is one login: the family of refresh tokens rotated from it.
    this.addSql(`
      create table sessions (
        id uuid primary key,
        user_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        last_refreshed_at timestamptz,
        revoked_at timestamptz,
        revoked_reason text
      )`);
    this.addSql('create index sessions_user_id_idx on sessions (user_id)');

    // Refresh tokens are stored only as SHA-256 hashes. A token with rotated_at set has been
    // exchanged already; presenting it again is reuse and revokes its session.
    this.addSql(`
      create table refresh_tokens (
        token_hash bytea primary key constraint refresh_tokens_hash_length check (octet_length(token_hash) = 32),
        session_id uuid not null references sessions (id) on delete cascade,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        rotated_at timestamptz
      )`);
    this.addSql('create index refresh_tokens_session_id_idx on refresh_tokens (session_id)');
  }
}
