import { Migration } from '@mikro-orm/migrations';

/**
 * The transactional outbox (src/platform/outbox.ts): a domain event recorded in the transaction
 * that commits its change, with one delivery row per consumer that takes its type (an extension's
 * handler; webhooks later), so what a node did not deliver before it stopped is left to the others.
 * Consumer names are opaque text. An event goes when its last delivery is done or dropped, and
 * what no node finishes is pruned, so neither table keeps what is handled.
 */
export class Migration0031Outbox extends Migration {
  override up(): void {
    this.addSql(`
      create table outbox_events (
        id uuid primary key,
        type text not null,
        data jsonb not null,
        at timestamptz not null
      )`);
    // next_attempt_at: when the delivery is due, its lease's end while a node handles it.
    this.addSql(`
      create table outbox_deliveries (
        event_id uuid not null references outbox_events (id) on delete cascade,
        consumer text not null,
        attempts integer not null default 0,
        next_attempt_at timestamptz not null,
        primary key (event_id, consumer)
      )`);
    // The claim reads the due deliveries oldest first, of the consumers a node has.
    this.addSql('create index outbox_deliveries_due_idx on outbox_deliveries (next_attempt_at, consumer)');
  }
}
