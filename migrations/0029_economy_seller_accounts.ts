import { Migration } from '@mikro-orm/migrations';

/** The statement of the migration, which a test also runs on a database it made such a listing in. */
export const SELLER_ACCOUNTS_SQL = `
  insert into economy_accounts (id, user_id, kind, created_at)
  select (substr(h, 1, 12) || '8' || substr(h, 14, 3)
          || substr('89ab', (('x' || substr(h, 17, 1))::bit(4)::int & 3) + 1, 1) || substr(h, 18, 15))::uuid,
         seller_id, kind::ledger_account, now()
  from (
    select s.seller_id, k.kind,
           encode(sha256(convert_to('atrium-account:' || s.seller_id::text || ':' || k.kind, 'UTF8')), 'hex') as h
    from (select distinct seller_id from marketplace_listings where state = 'active' and seller_id is not null) s
    cross join (values ('creator_pending'), ('creator_available')) as k (kind)
  ) derived
  on conflict (id) do nothing`;

/**
 * The creator_pending and creator_available accounts of the sellers of active listings made before
 * listings made them (docs/economy.md, "Accounts"): a purchase credits them and counts on their
 * being there. The ids are those src/modules/economy/accounts.ts derives (sha256 of the owner and
 * the kind, as a version 8 UUID), spelled here in SQL; accounts that exist are left as they are.
 */
export class Migration0029EconomySellerAccounts extends Migration {
  override up(): void {
    this.addSql(SELLER_ACCOUNTS_SQL);
  }
}
