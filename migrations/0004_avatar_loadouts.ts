import { Migration } from '@mikro-orm/migrations';

/**
 * One avatar loadout per user, stored as the JSON document the game client produces. The server
 * checks only the envelope (see docs/profiles.md), so the column is plain jsonb; the check keeps
 * anything but an object out even if a future code path forgets the envelope validation.
 */
export class Migration0004AvatarLoadouts extends Migration {
  override up(): void {
    this.addSql(`
      create table avatar_loadouts (
        user_id uuid primary key references users (id) on delete cascade,
        document jsonb not null constraint avatar_loadouts_document_object check (jsonb_typeof(document) = 'object'),
        updated_at timestamptz not null default now()
      )`);
  }
}
