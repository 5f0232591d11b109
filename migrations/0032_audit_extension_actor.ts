import { Migration } from '@mikro-orm/migrations';

/**
 * Extensions as actors (an extension's `ctx.economy.grant`, docs/admin.md and docs/economy.md): an
 * audit entry may name an extension as its actor, and an economy idempotency key may belong to an
 * extension instead of a user.
 *
 * - `audit_log.actor_id` becomes text: an account's id (a lower-case UUID, as `uuid::text` spells
 *   it) for `user`, the extension's name for the new kind `extension`, null for `cli` and `system`.
 *   One column keeps the one filter index (`audit_log_actor_idx`, rebuilt by the type change) for
 *   both kinds. The type change rewrites the table without firing its row triggers, so the
 *   append-only trigger stays as it is and refuses the entries' changes as before.
 * - `economy_idempotency_keys` gains `extension`: a key is either a user's (`user_id`, deleted with
 *   the account) or an extension's, scoped to it whoever it names. The primary key on
 *   `(user_id, key)` becomes a unique constraint on the same columns (a primary key allows no null
 *   `user_id`), which the users' claims (`on conflict (user_id, key)`) use as before.
 */
export class Migration0032AuditExtensionActor extends Migration {
  override up(): void {
    this.addSql(`
      alter table audit_log
        drop constraint audit_log_actor_kind_check,
        drop constraint audit_log_actor,
        alter column actor_id type text using actor_id::text,
        add constraint audit_log_actor_kind check (actor_kind in ('user', 'cli', 'system', 'extension')),
        add constraint audit_log_actor check (case actor_kind
          when 'user' then coalesce(actor_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', false)
          when 'extension' then coalesce(actor_id ~ '^[a-z][a-z0-9_-]{0,63}$', false)
          else actor_id is null end)`);
    this.addSql(`
      alter table economy_idempotency_keys
        drop constraint economy_idempotency_keys_pkey,
        alter column user_id drop not null,
        add column extension text,
        add constraint economy_idempotency_keys_user_key unique (user_id, key),
        add constraint economy_idempotency_keys_extension_key unique (extension, key),
        add constraint economy_idempotency_keys_owner check ((user_id is null) <> (extension is null))`);
  }
}
