import { Migration } from '@mikro-orm/migrations';

/**
 * The double-entry ledger (docs/economy.md): transactions and their entries, the idempotency keys
 * stored with them, creator payouts and inventories. The database itself keeps the ledger honest:
 * entries and transactions are append-only (a trigger refuses UPDATE, DELETE and TRUNCATE), and a
 * deferred constraint trigger refuses to commit a transaction whose entries do not sum to zero.
 */
export class Migration0014EconomyLedger extends Migration {
  override up(): void {
    // Added, not created: ledger_entry_kind is 0001's. The value is not used in this migration,
    // which may run in the same transaction (Postgres refuses a value added in an open transaction).
    this.addSql(`alter type ledger_entry_kind add value if not exists 'release'`);

    this.addSql(`
      create table creator_payouts (
        id uuid primary key,
        user_id uuid references users (id) on delete set null,
        amount bigint not null constraint creator_payouts_amount check (amount between 1 and 1000000000000),
        state payout_state not null default 'requested',
        note text constraint creator_payouts_note_length check (char_length(note) <= 2000),
        decided_by uuid references users (id) on delete set null,
        available_account_id uuid not null references economy_accounts (id),
        payout_account_id uuid not null references economy_accounts (id),
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);
    this.addSql(
      'create index creator_payouts_by_user on creator_payouts (user_id, created_at desc, id desc)',
    );
    this.addSql('create index creator_payouts_by_state on creator_payouts (state, created_at, id)');

    // No foreign keys to users here: a set-null action would be an UPDATE, which the ledger refuses.
    // Who acted stays as an opaque id; the accounts carry whose money it is.
    this.addSql(`
      create table economy_transactions (
        id uuid primary key,
        kind ledger_entry_kind not null,
        purchase_id uuid references purchases (id),
        payout_id uuid references creator_payouts (id),
        actor_id uuid,
        reason text constraint economy_transactions_reason_length check (char_length(reason) <= 2000),
        created_at timestamptz not null
      )`);
    this.addSql(
      'create index economy_transactions_by_purchase on economy_transactions (purchase_id) where purchase_id is not null',
    );
    this.addSql(
      'create index economy_transactions_by_payout on economy_transactions (payout_id) where payout_id is not null',
    );
    this.addSql(`
      create table economy_entries (
        id uuid primary key,
        transaction_id uuid not null references economy_transactions (id),
        account_id uuid not null references economy_accounts (id),
        kind ledger_entry_kind not null,
        amount bigint not null constraint economy_entries_amount check (amount <> 0),
        balance_after bigint not null,
        created_at timestamptz not null,
        -- The order entries moved their account in: taken under the account's lock, so
        -- balance_after is the running sum in this order (what verify checks).
        seq bigint generated always as identity
      )`);
    this.addSql(
      'create index economy_entries_by_account on economy_entries (account_id, created_at desc, id desc)',
    );
    this.addSql('create index economy_entries_by_transaction on economy_entries (transaction_id)');

    this.addSql(`
      create function economy_ledger_append_only() returns trigger language plpgsql as $$
      begin
        raise exception 'the ledger is append-only: % on % refused', tg_op, tg_table_name
          using errcode = 'restrict_violation';
      end
      $$`);
    for (const table of ['economy_transactions', 'economy_entries']) {
      this.addSql(`
        create trigger ${table}_append_only before update or delete on ${table}
        for each row execute function economy_ledger_append_only()`);
      this.addSql(`
        create trigger ${table}_no_truncate before truncate on ${table}
        for each statement execute function economy_ledger_append_only()`);
    }
    this.addSql(`
      create function economy_transaction_balanced() returns trigger language plpgsql as $$
      declare
        total numeric;
      begin
        select sum(amount) into total from economy_entries where transaction_id = new.transaction_id;
        if total <> 0 then
          raise exception 'ledger transaction % does not sum to zero (%)', new.transaction_id, total
            using errcode = 'check_violation';
        end if;
        return null;
      end
      $$`);
    this.addSql(`
      create constraint trigger economy_entries_balanced after insert on economy_entries
      deferrable initially deferred
      for each row execute function economy_transaction_balanced()`);

    // A purchase row is written before its transaction (which names it), so its reference is
    // checked at commit.
    this.addSql(`
      alter table purchases
        add constraint purchases_transaction_fk foreign key (transaction_id) references economy_transactions (id) deferrable initially deferred,
        add constraint purchases_refund_transaction_fk foreign key (refund_transaction_id) references economy_transactions (id) deferrable initially deferred,
        add constraint purchases_release_transaction_fk foreign key (release_transaction_id) references economy_transactions (id) deferrable initially deferred`);

    // A write's answer, stored in the transaction of its effects: a retry with the key replays it
    // (with the operation's one success status). The response is null only while the claim is open.
    this.addSql(`
      create table economy_idempotency_keys (
        user_id uuid not null references users (id) on delete cascade,
        key text not null,
        fingerprint text not null,
        response jsonb,
        created_at timestamptz not null,
        primary key (user_id, key)
      )`);
    this.addSql('create index economy_idempotency_keys_by_age on economy_idempotency_keys (created_at)');

    this.addSql(`
      create table inventory_items (
        user_id uuid not null references users (id) on delete cascade,
        item_id uuid not null references catalog_items (id),
        quantity integer not null constraint inventory_items_quantity check (quantity >= 1),
        acquired_at timestamptz not null,
        updated_at timestamptz not null,
        primary key (user_id, item_id)
      )`);
    this.addSql(
      'create index inventory_items_by_user on inventory_items (user_id, acquired_at desc, item_id desc)',
    );
  }
}
