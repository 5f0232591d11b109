import { Migration } from '@mikro-orm/migrations';

/**
 * Account suspensions (docs/admin.md): a suspended account cannot sign in or refresh until
 * `suspended_until` (null: until lifted). The state stays in the row after it lapses; whether it
 * is in force is `suspended_at is not null and (suspended_until is null or suspended_until > now())`,
 * read at login and refresh, so no job has to lift it. Who suspended is kept as an id without a
 * foreign key, like the audit log's actors, so it outlives that account.
 */
export class Migration0024AccountSuspensions extends Migration {
  override up(): void {
    this.addSql(`
      alter table users
        add column suspended_at timestamptz,
        add column suspended_until timestamptz,
        add column suspension_reason text,
        add column suspended_by uuid,
        add constraint users_suspension_whole check (
          (suspended_at is null) = (suspension_reason is null)
          and (suspended_at is not null or (suspended_until is null and suspended_by is null))
        ),
        add constraint users_suspension_reason_length check (char_length(suspension_reason) between 1 and 500)`);
    // The console's account list pages newest first (GET /api/admin/users).
    this.addSql('create index users_created_idx on users (created_at desc, id desc)');
  }
}
