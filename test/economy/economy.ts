import { randomUUID } from 'node:crypto';
import type { Item, Listing } from '../../protocol/economy.js';
import type { AuthUser } from '../../src/platform/auth/access-tokens.js';
import { executeBound } from '../../src/platform/db.js';
import type { Services, ServiceUser } from '../helpers/services.js';

/** Fixtures of the economy tests, at the service level. */

/** A fresh Idempotency-Key. */
export const key = () => randomUUID();

export function asAdmin(user: AuthUser): AuthUser {
  return { ...user, roles: [...user.roles, 'admin'] };
}

/** A user with `amount` in their wallet, granted by `admin`. */
export async function fundedUser(
  services: Services,
  admin: ServiceUser,
  amount: number,
): Promise<ServiceUser> {
  const user = await services.createUser();
  await grant(services, admin, user.user.id, amount);
  return user;
}

export function grant(services: Services, admin: ServiceUser, userId: string, amount: number) {
  return services.call('economy.admin.grant', services.ctxFor(asAdmin(admin.user)), {
    idempotency_key: key(),
    user_id: userId,
    amount,
    reason: 'test grant',
  });
}

/** A published item of `creator`'s and an active listing of it at `price`. */
export async function listedItem(
  services: Services,
  creator: ServiceUser,
  options: { price: number; quantity?: number; consumable?: boolean },
): Promise<{ item: Item; listing: Listing }> {
  const ctx = services.ctxFor(creator.user);
  const draft = await services.call('economy.items.create', ctx, {
    idempotency_key: key(),
    name: 'Hat',
    asset_type: 'accessory',
    consumable: options.consumable ?? false,
  });
  const item = await services.call('economy.items.update', ctx, {
    idempotency_key: key(),
    item_id: draft.id,
    state: 'published',
  });
  const listing = await services.call('economy.listings.create', ctx, {
    idempotency_key: key(),
    item_id: item.id,
    price: options.price,
    ...(options.quantity === undefined ? {} : { quantity: options.quantity }),
  });
  return { item, listing };
}

export function buy(services: Services, buyer: ServiceUser, listingId: string, idempotencyKey = key()) {
  return services.call('economy.purchases.create', services.ctxFor(buyer.user), {
    idempotency_key: idempotencyKey,
    listing_id: listingId,
  });
}

/** Rows of the ledger tables, to prove a refusal wrote nothing. */
export async function ledgerCounts(services: Services) {
  const [row] = await executeBound<Record<string, string>>(
    services.db.data,
    `select (select count(*) from economy_transactions)::text as transactions,
            (select count(*) from economy_entries)::text as entries,
            (select count(*) from purchases)::text as purchases,
            (select count(*) from inventory_items)::text as inventory,
            (select count(*) from economy_idempotency_keys)::text as keys`,
    [],
  );
  return row;
}

export async function balanceOf(services: Services, user: ServiceUser): Promise<number> {
  return (await services.call('economy.wallet', services.ctxFor(user.user), undefined)).balance;
}

/** A creator with `sales` released sales of 1000 (700 each after the fee) available. */
export async function earningCreator(s: Services, admin: ServiceUser, sales: number): Promise<ServiceUser> {
  const creator = await s.createUser();
  const buyer = await fundedUser(s, admin, 1000 * sales);
  const { listing } = await listedItem(s, creator, { price: 1000, consumable: true });
  for (let i = 0; i < sales; i++) await buy(s, buyer, listing.id);
  await executeBound(
    s.db.data,
    `update purchases set hold_until = now() - interval '1 second' where seller_id = $1`,
    [creator.user.id],
  );
  return creator;
}
