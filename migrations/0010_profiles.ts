import { Migration } from '@mikro-orm/migrations';

/**
 * One profile per user, created by the first PUT /api/profile/me; a user without a row has the
 * default profile. Every column has a default so a partial first write can insert only what it
 * sets. The privacy columns reuse the enumeration types created in 0001.
 */
export class Migration0010Profiles extends Migration {
  override up(): void {
    this.addSql(`
      create table profiles (
        user_id uuid primary key references users (id) on delete cascade,
        bio text not null default '' constraint profiles_bio_length check (char_length(bio) <= 500),
        avatar_asset_id text constraint profiles_avatar_asset_id_length check (char_length(avatar_asset_id) <= 64),
        profile_visibility profile_visibility not null default 'public',
        presence_visibility audience not null default 'everyone',
        dm_policy audience not null default 'everyone',
        favorites_visibility profile_visibility not null default 'public',
        updated_at timestamptz not null default now()
      )`);
  }
}
