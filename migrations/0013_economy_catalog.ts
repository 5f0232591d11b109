import { Migration } from '@mikro-orm/migrations';

/**
 * Catalog, marketplace, purchase and creator balance (the specification's 0013). Balances of
 * every kind live in `economy_accounts`: a user's wallet and creator balances (pending, available,
 * in payout) and the platform's accounts. A user account never goes below zero, by a check of
 * the database itself, so no code path (or racing requests) can overspend; only the issuance
 * account, the source of grants, runs negative. The ledger that moves these balances is 0014's.
 *
 * A deleted user's money history stays: accounts, listings and purchases keep their rows with the
 * party set null (a tombstone). Triggers retire a deleted creator's items and cancel a deleted
 * seller's active listings as the foreign key nulls them, so no path can forget to.
 */
export class Migration0013EconomyCatalog extends Migration {
  override up(): void {
    this.addSql(
      `create type ledger_account as enum ('wallet', 'creator_pending', 'creator_available', 'creator_payout', 'platform_issuance', 'platform_revenue', 'platform_payouts')`,
    );
    this.addSql(`create type catalog_item_state as enum ('draft', 'published', 'retired')`);

    this.addSql(`
      create table economy_accounts (
        id uuid primary key,
        user_id uuid references users (id) on delete set null,
        kind ledger_account not null,
        balance bigint not null default 0,
        created_at timestamptz not null,
        -- Null until the first entry moves the balance.
        updated_at timestamptz,
        constraint economy_accounts_not_negative check (kind = 'platform_issuance' or balance >= 0),
        constraint economy_accounts_platform_unowned check (kind::text not like 'platform\\_%' or user_id is null)
      )`);
    this.addSql(
      'create index economy_accounts_user_id_idx on economy_accounts (user_id) where user_id is not null',
    );
    // The platform's accounts have fixed ids (src/modules/economy/accounts.ts names them).
    this.addSql(`
      insert into economy_accounts (id, user_id, kind, balance, created_at) values
        ('00000000-0000-8000-8000-000000000001', null, 'platform_issuance', 0, now()),
        ('00000000-0000-8000-8000-000000000002', null, 'platform_revenue', 0, now()),
        ('00000000-0000-8000-8000-000000000003', null, 'platform_payouts', 0, now())`);

    this.addSql(`
      create table catalog_items (
        id uuid primary key,
        creator_id uuid references users (id) on delete set null,
        name text not null constraint catalog_items_name_length check (char_length(name) between 1 and 100),
        description text constraint catalog_items_description_length check (char_length(description) <= 2000),
        asset_type asset_type not null,
        asset_id text constraint catalog_items_asset_id_length check (char_length(asset_id) between 1 and 128),
        consumable boolean not null default false,
        state catalog_item_state not null default 'draft',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        published_at timestamptz
      )`);
    this.addSql(
      'create index catalog_items_by_creator on catalog_items (creator_id, created_at desc, id desc)',
    );
    this.addSql(
      `create index catalog_items_published on catalog_items (created_at desc, id desc) where state = 'published'`,
    );
    this.addSql(`
      create function catalog_items_retire_orphans() returns trigger language plpgsql as $$
      begin
        -- The creator's account was deleted: the item leaves the catalog; owners keep it.
        if old.creator_id is not null and new.creator_id is null and new.state <> 'retired' then
          new.state := 'retired';
          new.updated_at := now();
        end if;
        return new;
      end
      $$`);
    this.addSql(`
      create trigger catalog_items_retire_orphans before update of creator_id on catalog_items
      for each row execute function catalog_items_retire_orphans()`);

    this.addSql(`
      create table marketplace_listings (
        id uuid primary key,
        item_id uuid not null references catalog_items (id),
        seller_id uuid references users (id) on delete set null,
        price bigint not null constraint marketplace_listings_price check (price between 1 and 1000000000000),
        quantity integer constraint marketplace_listings_quantity check (quantity >= 1),
        sold_count integer not null default 0,
        state listing_state not null default 'active',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        constraint marketplace_listings_never_oversold check (sold_count >= 0 and (quantity is null or sold_count <= quantity))
      )`);
    this.addSql(
      `create index marketplace_listings_active on marketplace_listings (created_at desc, id desc) where state = 'active'`,
    );
    this.addSql(
      'create index marketplace_listings_by_item on marketplace_listings (item_id, created_at desc, id desc)',
    );
    this.addSql(
      'create index marketplace_listings_by_seller on marketplace_listings (seller_id, created_at desc, id desc)',
    );
    this.addSql(`
      create function marketplace_listings_cancel_orphans() returns trigger language plpgsql as $$
      begin
        -- The seller's account was deleted: nobody can buy from it any more.
        if old.seller_id is not null and new.seller_id is null and new.state = 'active' then
          new.state := 'cancelled';
          new.updated_at := now();
        end if;
        return new;
      end
      $$`);
    this.addSql(`
      create trigger marketplace_listings_cancel_orphans before update of seller_id on marketplace_listings
      for each row execute function marketplace_listings_cancel_orphans()`);

    // The seller's accounts are kept on the purchase, so its hold is released (or refunded) into
    // the right accounts even after the seller's account was deleted.
    this.addSql(`
      create table purchases (
        id uuid primary key,
        listing_id uuid not null references marketplace_listings (id),
        item_id uuid not null references catalog_items (id),
        buyer_id uuid references users (id) on delete set null,
        seller_id uuid references users (id) on delete set null,
        price bigint not null,
        fee bigint not null,
        seller_amount bigint not null,
        state purchase_state not null default 'completed',
        hold_until timestamptz not null,
        released_at timestamptz,
        transaction_id uuid not null,
        refund_transaction_id uuid,
        release_transaction_id uuid,
        seller_pending_account_id uuid not null references economy_accounts (id),
        seller_available_account_id uuid not null references economy_accounts (id),
        created_at timestamptz not null,
        updated_at timestamptz not null,
        constraint purchases_amounts check (price >= 1 and fee >= 0 and seller_amount >= 0 and fee + seller_amount = price)
      )`);
    this.addSql('create index purchases_by_buyer on purchases (buyer_id, created_at desc, id desc)');
    this.addSql('create index purchases_by_seller on purchases (seller_id, created_at desc, id desc)');
    this.addSql(
      `create index purchases_held on purchases (hold_until, id) where state = 'completed' and released_at is null`,
    );
    this.addSql(
      `create index purchases_held_by_seller on purchases (seller_id, hold_until) where state = 'completed' and released_at is null`,
    );
  }
}
