import { Migration } from '@mikro-orm/migrations';

/**
 * The audit log: one row per admin, moderator or operator action (docs/admin.md). Rows are
 * append-only, enforced here rather than trusted to the code: a trigger refuses UPDATE, DELETE and
 * TRUNCATE. Actor and target ids carry no foreign key, so an entry outlives the accounts it names
 * (a deleted user's suspension stays on record).
 */
export class Migration0023AuditLog extends Migration {
  override up(): void {
    this.addSql(`
      create table audit_log (
        id uuid primary key,
        at timestamptz not null default now(),
        actor_kind text not null check (actor_kind in ('user', 'cli', 'system')),
        actor_id uuid,
        action text not null check (char_length(action) between 1 and 100),
        target_type text not null check (char_length(target_type) between 1 and 50),
        target_id text not null check (char_length(target_id) between 1 and 200),
        before jsonb,
        after jsonb,
        constraint audit_log_actor check ((actor_kind = 'user') = (actor_id is not null))
      )`);
    // One index per filter of GET /api/admin/audit, each in the list's order (newest first).
    this.addSql('create index audit_log_at_idx on audit_log (at desc, id desc)');
    this.addSql(
      'create index audit_log_actor_idx on audit_log (actor_id, at desc, id desc) where actor_id is not null',
    );
    this.addSql('create index audit_log_target_idx on audit_log (target_id, at desc, id desc)');
    this.addSql('create index audit_log_action_idx on audit_log (action, at desc, id desc)');
    this.addSql(`
      create function audit_log_append_only() returns trigger language plpgsql as $$
      begin
        raise exception 'the audit log is append-only: % on % refused', tg_op, tg_table_name
          using errcode = 'restrict_violation';
      end $$`);
    this.addSql(`
      create trigger audit_log_append_only before update or delete on audit_log
      for each row execute function audit_log_append_only()`);
    this.addSql(`
      create trigger audit_log_no_truncate before truncate on audit_log
      for each statement execute function audit_log_append_only()`);
  }
}
