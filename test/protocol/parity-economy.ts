import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import type { Accounts, RestName, Row } from './parity-types.js';

/** The economy's rows of the parity table: each run of a write gets its own Idempotency-Key. */

type EconomyName = Extract<RestName, `economy.${string}`>;

interface Scene {
  admin: TokenResponse;
  /** A consumable item of `other`'s listed without limit: each run of the purchase row buys one. */
  otherListing: string;
  /** A published item of `other`'s with one listing, listed by no row. */
  quietItem: string;
  quietListing: string;
  /** A published item of `other`'s that the listing row lists again each run. */
  listableItem: string;
  /** A consumable item of `me`'s listed at 2000: `other` buys it for the refund row. */
  myListing: string;
  /** A purchase by `me`, and a grant to `me`, for the rows that read one. */
  myPurchase: string;
  grantTransaction: string;
  myPayout: string;
}

const key = () => randomUUID();

export function economyRows(appOf: () => TestApp): { [N in EconomyName]: Row<N> } {
  let scene: Promise<Scene> | undefined;
  const send = async (token: string, method: 'POST' | 'PATCH', url: string, payload: object) => {
    const response = await appOf().http.inject({
      method,
      url,
      headers: { ...bearer(token), 'idempotency-key': key() },
      payload,
    });
    expect(response.statusCode, response.body).toBeLessThan(300);
    return response.json();
  };
  const listedItem = async (seller: TokenResponse, price: number) => {
    const item = await send(seller.access_token, 'POST', '/api/economy/items', {
      name: 'Parity item',
      asset_type: 'emote',
      consumable: true,
    });
    await send(seller.access_token, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await send(seller.access_token, 'POST', '/api/economy/listings', {
      item_id: item.id,
      price,
    });
    return { itemId: item.id as string, listingId: listing.id as string };
  };
  const buy = async (buyer: TokenResponse, listingId: string): Promise<string> =>
    (await send(buyer.access_token, 'POST', '/api/economy/purchases', { listing_id: listingId })).id;
  const requestPayout = async (me: TokenResponse): Promise<string> =>
    (await send(me.access_token, 'POST', '/api/economy/payouts', { amount: 1000 })).id;

  const setUp = ({ me, other }: Accounts) => {
    scene ??= (async () => {
      const admin = await registerWithRole(appOf(), 'admin');
      const grant = await send(admin.access_token, 'POST', '/api/economy/admin/grants', {
        user_id: me.user.id,
        amount: 100_000,
        reason: 'parity',
      });
      await send(admin.access_token, 'POST', '/api/economy/admin/grants', {
        user_id: other.user.id,
        amount: 100_000,
        reason: 'parity',
      });
      const otherListing = (await listedItem(other, 100)).listingId;
      const quiet = await listedItem(other, 300);
      const listable = await listedItem(other, 500);
      const mine = await listedItem(me, 2000);
      // Six sales of `me`'s whose hold is made to end now: 8400 available for the payout rows.
      const sales: string[] = [];
      for (let i = 0; i < 6; i++) sales.push(await buy(other, mine.listingId));
      for (const id of sales) {
        await queryRows(
          appOf().db,
          `update purchases set hold_until = now() - interval '1 second' where id = ?`,
          [id],
        );
      }
      await appOf().modules.economy.releaseDue();
      return {
        admin,
        otherListing,
        quietItem: quiet.itemId,
        quietListing: quiet.listingId,
        listableItem: listable.itemId,
        myListing: mine.listingId,
        myPurchase: await buy(me, otherListing),
        grantTransaction: grant.transaction_id,
        myPayout: await requestPayout(me),
      };
    })();
    return scene;
  };
  const asMe = ({ me }: Accounts) => ({ token: me.access_token });

  return {
    'economy.settings': { prepare: asMe },
    'economy.wallet': { prepare: asMe },
    'economy.ledger': { prepare: (a) => ({ ...asMe(a), input: { account: 'wallet' } }) },
    'economy.transaction': {
      prepare: async (a) => ({ ...asMe(a), input: { transaction_id: (await setUp(a)).grantTransaction } }),
    },
    'economy.items.create': {
      fresh: true,
      prepare: (a) => ({
        ...asMe(a),
        input: { idempotency_key: key(), name: 'Cape', asset_type: 'clothing', description: 'red' },
      }),
    },
    'economy.items.list': {
      prepare: async (a) => {
        await setUp(a);
        return { ...asMe(a), input: { creator_id: a.other.user.id, limit: 2 } };
      },
    },
    'economy.items.get': {
      prepare: async (a) => ({ ...asMe(a), input: { item_id: (await setUp(a)).quietItem } }),
    },
    'economy.items.update': {
      fresh: true,
      prepare: async (a) => {
        const item = await send(a.me.access_token, 'POST', '/api/economy/items', {
          name: 'Draft',
          asset_type: 'model',
        });
        return { ...asMe(a), input: { idempotency_key: key(), item_id: item.id, name: 'Renamed' } };
      },
    },
    'economy.listings.create': {
      fresh: true,
      prepare: async (a) => ({
        token: a.other.access_token,
        input: { idempotency_key: key(), item_id: (await setUp(a)).listableItem, price: 700, quantity: 3 },
      }),
    },
    'economy.listings.list': {
      prepare: async (a) => ({ ...asMe(a), input: { item_id: (await setUp(a)).quietItem } }),
    },
    'economy.listings.get': {
      prepare: async (a) => ({ ...asMe(a), input: { listing_id: (await setUp(a)).quietListing } }),
    },
    'economy.listings.cancel': {
      prepare: async (a) => {
        const { listableItem } = await setUp(a);
        const listing = await send(a.other.access_token, 'POST', '/api/economy/listings', {
          item_id: listableItem,
          price: 900,
        });
        return { token: a.other.access_token, input: { listing_id: listing.id } };
      },
    },
    'economy.purchases.create': {
      fresh: true,
      prepare: async (a) => ({
        ...asMe(a),
        input: { idempotency_key: key(), listing_id: (await setUp(a)).otherListing },
      }),
    },
    'economy.purchases.list': {
      prepare: async (a) => {
        await setUp(a);
        return { ...asMe(a), input: { role: 'seller', limit: 3 } };
      },
    },
    'economy.purchases.get': {
      prepare: async (a) => ({ ...asMe(a), input: { purchase_id: (await setUp(a)).myPurchase } }),
    },
    'economy.inventory': {
      prepare: async (a) => {
        await setUp(a);
        return { ...asMe(a), input: {} };
      },
    },
    'economy.creator.balance': {
      prepare: async (a) => {
        await setUp(a);
        return asMe(a);
      },
    },
    'economy.payouts.create': {
      fresh: true,
      prepare: async (a) => {
        await setUp(a);
        return { ...asMe(a), input: { idempotency_key: key(), amount: 1000 } };
      },
    },
    'economy.payouts.list': {
      prepare: async (a) => {
        await setUp(a);
        return { ...asMe(a), input: { limit: 1 } };
      },
    },
    'economy.payouts.get': {
      prepare: async (a) => ({ ...asMe(a), input: { payout_id: (await setUp(a)).myPayout } }),
    },
    'economy.admin.grant': {
      fresh: true,
      prepare: async (a) => {
        const { admin } = await setUp(a);
        const { user } = await registerUser(appOf());
        return {
          token: admin.access_token,
          input: { idempotency_key: key(), user_id: user.id, amount: 25, reason: 'welcome' },
        };
      },
    },
    'economy.admin.ledger': {
      prepare: async (a) => ({
        token: (await setUp(a)).admin.access_token,
        input: { user_id: a.me.user.id, account: 'creator_available', limit: 5 },
      }),
    },
    'economy.admin.payouts': {
      prepare: async (a) => ({ token: (await setUp(a)).admin.access_token, input: { state: 'paid' } }),
    },
    'economy.admin.payouts.decide': {
      fresh: true,
      prepare: async (a) => {
        const { admin } = await setUp(a);
        const payout = await requestPayout(a.me);
        return {
          token: admin.access_token,
          input: {
            idempotency_key: key(),
            payout_id: payout,
            state: 'rejected',
            expected_state: 'requested',
            note: 'missing tax form',
          },
        };
      },
    },
    'economy.admin.refund': {
      fresh: true,
      prepare: async (a) => {
        const { admin, myListing } = await setUp(a);
        const purchase = await buy(a.other, myListing);
        return {
          token: admin.access_token,
          input: { idempotency_key: key(), purchase_id: purchase, reason: 'chargeback' },
        };
      },
    },
    'economy.admin.verify': {
      prepare: async (a) => ({ token: (await setUp(a)).admin.access_token }),
    },
  };
}
