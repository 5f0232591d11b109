import { userAccountIdSql } from '../../src/modules/economy/accounts.js';
import { inboxLockSql } from '../../src/modules/notifications/index.js';
import { STORE_NOTIFICATIONS_SQL } from '../../src/modules/notifications/notifications.repository.js';
import { SUBSCRIBED_ENDPOINT_EXISTS_SQL } from '../../src/modules/webhooks/deliveries.repository.js';
import { recordEventsSql } from '../../src/platform/outbox-store.js';
import { pgbenchUuid } from '../chat/ceiling.js';

/**
 * The pgbench ceiling of a purchase: the statements PurchasesService.buy runs in its transaction
 * (src/modules/economy/purchases.service.ts, idempotency.ts and the repositories), copied from
 * their source, with the buyer and the seller drawn as the REST load draws them (buyers 1..buyers,
 * sellers after them, one consumable listing each). Two differences, both of the same cost: the
 * listing is found by its seller (pgbench has numbers, not the listing's id), and the ids the
 * service makes in JavaScript (entries, purchase, transaction, idempotency key, event,
 * notification) are made in SQL. The statements go in the service's three round trips (pgbench's
 * pipelines): BEGIN with the key's claim, the sale, and the rest with the COMMIT. The event's
 * statement and the seller's notification's are the service's own text (recordEventsSql with the
 * webhooks' condition, as the service records a purchase's event; STORE_NOTIFICATIONS_SQL) with
 * the parameters pgbench cannot bind written in. With no webhook endpoint (as in the bench) the
 * condition holds for none, and neither writes the event.
 */

const REVENUE = `'00000000-0000-8000-8000-000000000002'::uuid`;
/** An answer of the size of a purchase's, bound (`-D answer=`) as the service binds the stored answer. */
export const ANSWER = JSON.stringify({
  id: '019ac4a1-0000-7000-8000-000000000000',
  listing_id: '019ac4a1-0000-7000-8000-000000000001',
  item_id: '019ac4a1-0000-7000-8000-000000000002',
  buyer_id: '019ac4a1-0000-7000-8000-000000000003',
  seller_id: '019ac4a1-0000-7000-8000-000000000004',
  price: 100,
  fee: 30,
  seller_amount: 70,
  currency: 'coin',
  state: 'completed',
  hold_until: '2026-12-04T06:00:00.000Z',
  transaction_id: '019ac4a1-0000-7000-8000-000000000005',
  refund_transaction_id: null,
  created_at: '2026-11-27T06:00:00.000Z',
});

/** `sql` with each `$n` replaced by the SQL expression `values[n - 1]`. */
export const withValues = (sql: string, values: readonly string[]) =>
  sql.replace(/\$(\d+)/g, (_, n: string) => `(${values[Number(n) - 1]})`);

/** The inbox bound of the service's default configuration (NOTIFICATIONS_MAX_PER_USER). */
const INBOX_CAP = 1000;

export function purchaseScript(buyers: number, sellers: number, prefix: string, feeBps: number): string {
  const buyer = pgbenchUuid(prefix, 'b');
  const seller = pgbenchUuid(prefix, 's');
  const wallet = userAccountIdSql(buyer, 'wallet');
  return `\\set b random(1, ${buyers})
\\set s random(${buyers + 1}, ${buyers + sellers})
\\set k random(1, 1000000000000000)
\\startpipeline
BEGIN;
insert into economy_idempotency_keys (user_id, key, fingerprint, created_at) values (${buyer}, :k::text, 'bench', now())
  on conflict (user_id, key) do update set fingerprint = excluded.fingerprint, response = null, created_at = excluded.created_at
  where economy_idempotency_keys.created_at < now() - interval '24 hours' returning 1;
\\endpipeline
with listing as (
  select l.id, l.item_id, l.seller_id, l.price, l.state, i.consumable,
    ${userAccountIdSql('l.seller_id', 'creator_pending')} as pending_account_id,
    ${userAccountIdSql('l.seller_id', 'creator_available')} as available_account_id,
    case when ${feeBps} > 0 then greatest(1, l.price * ${feeBps} / 10000) else 0 end as fee
  from marketplace_listings l join catalog_items i on i.id = l.item_id
  where l.seller_id = ${seller} and l.state = 'active'
), unit as (
  insert into inventory_items (user_id, item_id, quantity, acquired_at, updated_at)
  select ${buyer}, item_id, 1, now(), now() from listing where state = 'active' and seller_id <> ${buyer}
  on conflict (user_id, item_id) do update set quantity = inventory_items.quantity + 1, updated_at = now()
    where (select consumable from listing)
  returning 1
), acc as (
  select id, balance from economy_accounts
  where id = any(array[${wallet}, (select pending_account_id from listing)])
    and exists (select from unit)
  order by id for update
), funds as (
  select exists (select from unit) as added,
         coalesce((select balance from acc where id = ${wallet}), 0) as balance
), sold as (
  update marketplace_listings l set sold_count = l.sold_count + 1,
    state = case when l.quantity is not null and l.sold_count + 1 >= l.quantity then 'sold'::listing_state else l.state end,
    updated_at = now()
  where l.id = (select id from listing) and l.state = 'active'
    and (select f.added and f.balance >= (select price from listing) from funds f)
  returning l.id
), p as (
  insert into purchases (id, listing_id, item_id, buyer_id, seller_id, price, fee, seller_amount, hold_until,
    transaction_id, seller_pending_account_id, seller_available_account_id, created_at, updated_at)
  select gen_random_uuid(), sold.id, l.item_id, ${buyer}, l.seller_id, l.price, l.fee, l.price - l.fee,
    now() + interval '7 days', gen_random_uuid(), l.pending_account_id, l.available_account_id, now(), now()
  from sold cross join listing l
  returning *
), inbox as (
  select ${inboxLockSql('p.seller_id')} from p
)
select l.state::text as listing_state, l.seller_id as listing_seller_id, l.price::text as price,
  f.added, f.balance::text as wallet_balance, p.id as purchase, p.transaction_id as tx, p.fee::text as fee,
  p.seller_pending_account_id as pending, (select count(*) from inbox) as inbox_locked
from funds f left join listing l on true left join p on true \\gset
\\startpipeline
update economy_idempotency_keys set response = :answer::jsonb where user_id = ${buyer} and key = :k::text;
${withValues(recordEventsSql([SUBSCRIBED_ENDPOINT_EXISTS_SQL]), [
  'array[gen_random_uuid()]',
  `'economy.purchase.completed'`,
  `jsonb_build_array(jsonb_build_object('purchase', :answer::jsonb))`,
  `array['bench-no-node']`,
])};
${withValues(STORE_NOTIFICATIONS_SQL, [
  `jsonb_build_array(jsonb_build_object('id', gen_random_uuid(), 'user_id', ${seller}, 'code', 'economy.item_sold',
      'subject', 'Your item Bench item sold for ' || :price || ' coin', 'created_at', now(),
      'content', jsonb_build_object('purchase_id', :purchase::uuid, 'item', jsonb_build_object('name', 'Bench item'),
        'price', :price::bigint, 'seller_amount', :price::bigint - :fee::bigint, 'currency', 'coin')))`,
  String(INBOX_CAP),
])};
with tx as (
  insert into economy_transactions (id, kind, purchase_id, payout_id, actor_id, reason, created_at)
  values (:tx::uuid, 'purchase', :purchase::uuid, null, null, null, now()) returning id
), moves as (
  select * from unnest(array[gen_random_uuid(), gen_random_uuid(), gen_random_uuid()],
    array[${wallet}, :pending::uuid, ${REVENUE}]::uuid[], array['purchase', 'sale', 'fee']::text[],
    array[-(:price::bigint), :price::bigint - :fee::bigint, :fee::bigint]::bigint[]) with ordinality as m(entry_id, account_id, kind, amount, n)
), moved as (
  update economy_accounts a set balance = a.balance + m.amount, updated_at = now()
  from moves m where a.id = m.account_id
  returning m.entry_id, m.n, m.kind as entry_kind, m.amount, a.id, a.kind, a.user_id, a.balance
), e as (
  insert into economy_entries (id, transaction_id, account_id, kind, amount, balance_after, created_at)
  select entry_id, (select id from tx), id, entry_kind::ledger_entry_kind, amount, balance, now() from moved
)
select m.entry_id as id, (select id from tx) as transaction_id, m.id as account_id, m.kind::text as account,
  m.user_id, m.entry_kind as kind, m.amount::text as amount, m.balance::text as balance_after, now() as created_at
from moved m order by m.n;
COMMIT;
\\endpipeline`;
}
