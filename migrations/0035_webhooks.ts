import { Migration } from '@mikro-orm/migrations';

/**
 * Outbound webhooks (src/modules/webhooks, docs/webhooks.md).
 *
 * - An endpoint keeps its current secret and, for a rotation's grace, the previous one (signatures
 *   need them in clear). `enabled_since` is when it was last enabled: an event recorded before
 *   that (while it was disabled) gets no delivery for it.
 * - A delivery is one event for one endpoint, unique per pair so the outbox's at-least-once
 *   fan-out writes it once; its body is stored as text, the same bytes on every attempt.
 *   `budget_start` is `attempts` when the current retry budget began (a redelivery starts one).
 *   A pending delivery's `next_attempt_at` is when it is due, or while an attempt runs
 *   (`attempting`), when that attempt's lease ends: a node that died mid-attempt leaves it due
 *   then. Deleting an endpoint deletes its deliveries.
 * - Indexes: due deliveries (pending only), an endpoint's log newest first, retention by finish time.
 */
export class Migration0035Webhooks extends Migration {
  override up(): void {
    this.addSql(`
      create table webhook_endpoints (
        id uuid primary key,
        url text not null,
        events text[] not null,
        enabled boolean not null,
        description text not null,
        secret text not null,
        previous_secret text,
        previous_secret_until timestamptz,
        enabled_since timestamptz not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);
    this.addSql('create index webhook_endpoints_page_idx on webhook_endpoints (created_at desc, id desc)');
    this.addSql(`
      create table webhook_deliveries (
        id uuid primary key,
        endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
        event_id uuid not null,
        event_type text not null,
        body text not null,
        status text not null check (status in ('pending', 'delivered', 'failed')),
        attempts integer not null,
        budget_start integer not null,
        last_status_code integer,
        last_error text,
        next_attempt_at timestamptz,
        attempting boolean not null,
        created_at timestamptz not null,
        delivered_at timestamptz,
        finished_at timestamptz,
        unique (endpoint_id, event_id)
      )`);
    this.addSql(
      "create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending'",
    );
    this.addSql(
      'create index webhook_deliveries_log_idx on webhook_deliveries (endpoint_id, created_at desc, id desc)',
    );
    this.addSql(
      "create index webhook_deliveries_finished_idx on webhook_deliveries (finished_at) where status <> 'pending'",
    );
  }
}
