import type { Model, PayoutState } from './model.js';

/**
 * The requests the driver makes, as operations on the model's slots, and the HTTP request each
 * one is sent as. A slot whose creation was refused has no id: a request naming it is sent with
 * a placeholder id that names nothing, so the request is still made (and answers 404).
 */

export type Decision = 'approved' | 'paid' | 'rejected';

export type Op =
  | { t: 'grant'; actor: number; user: number | null; amount: number }
  | { t: 'item.create'; actor: number; slot: number; consumable: boolean }
  | { t: 'item.state'; actor: number; item: number; state: 'published' | 'retired' }
  | {
      t: 'listing.create';
      actor: number;
      slot: number;
      item: number;
      price: number;
      quantity: number | null;
    }
  | { t: 'listing.cancel'; actor: number; listing: number }
  | { t: 'purchase'; actor: number; slot: number; listing: number }
  | { t: 'refund'; actor: number; purchase: number }
  | { t: 'payout.request'; actor: number; slot: number; amount: number }
  | {
      t: 'payout.decide';
      actor: number;
      payout: number;
      state: Decision;
      /** The state the admin decided from: what the model held when the request was made. */
      expected: PayoutState;
      note: string | null;
    }
  | { t: 'read.wallet'; actor: number }
  | { t: 'read.creator'; actor: number }
  | { t: 'read.inventory'; actor: number; item: number };

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
  /** The Idempotency-Key of a write; none on reads and DELETE. */
  key?: string;
}

/** An operation with the exact request that carried it (a replay sends the same request again). */
export interface Sent {
  op: Op;
  request: HttpRequest;
}

/** A well-formed id that the service never mints (version 7, time 0): it names nothing. */
export function placeholderId(kind: number, slot: number): string {
  return `00000000-0000-7000-8${kind.toString(16).padStart(3, '0')}-${slot.toString(16).padStart(12, '0')}`;
}

function idOf(id: string | null | undefined, kind: number, slot: number): string {
  return id ?? placeholderId(kind, slot);
}

/** The request of an operation as the model stands now; `key` for a write. */
export function requestOf(model: Model, op: Op, key: string): HttpRequest {
  const E = '/api/economy';
  switch (op.t) {
    case 'grant': {
      const user = op.user === null ? placeholderId(1, 0) : model.user(op.user).id;
      return {
        method: 'POST',
        path: `${E}/admin/grants`,
        body: { user_id: user, amount: op.amount, reason: 'sim' },
        key,
      };
    }
    case 'item.create':
      return {
        method: 'POST',
        path: `${E}/items`,
        body: { name: `item ${op.slot}`, asset_type: 'accessory', consumable: op.consumable },
        key,
      };
    case 'item.state':
      return {
        method: 'PATCH',
        path: `${E}/items/${idOf(model.items[op.item]?.id, 2, op.item)}`,
        body: { state: op.state },
        key,
      };
    case 'listing.create':
      return {
        method: 'POST',
        path: `${E}/listings`,
        body: {
          item_id: idOf(model.items[op.item]?.id, 2, op.item),
          price: op.price,
          ...(op.quantity === null ? {} : { quantity: op.quantity }),
        },
        key,
      };
    case 'listing.cancel':
      return {
        method: 'DELETE',
        path: `${E}/listings/${idOf(model.listings[op.listing]?.id, 3, op.listing)}`,
      };
    case 'purchase':
      return {
        method: 'POST',
        path: `${E}/purchases`,
        body: { listing_id: idOf(model.listings[op.listing]?.id, 3, op.listing) },
        key,
      };
    case 'refund':
      return {
        method: 'POST',
        path: `${E}/admin/purchases/${idOf(model.purchases[op.purchase]?.id, 4, op.purchase)}/refund`,
        body: { reason: 'sim' },
        key,
      };
    case 'payout.request':
      return { method: 'POST', path: `${E}/payouts`, body: { amount: op.amount }, key };
    case 'payout.decide':
      return {
        method: 'PATCH',
        path: `${E}/admin/payouts/${idOf(model.payouts[op.payout]?.id, 5, op.payout)}`,
        body: {
          state: op.state,
          expected_state: op.expected,
          ...(op.note === null ? {} : { note: op.note }),
        },
        key,
      };
    case 'read.wallet':
      return { method: 'GET', path: `${E}/wallet` };
    case 'read.creator':
      return { method: 'GET', path: `${E}/creator/balance` };
    case 'read.inventory':
      return { method: 'GET', path: `${E}/inventory?item_id=${idOf(model.items[op.item]?.id, 2, op.item)}` };
  }
}

/** The request's identity for the Idempotency-Key: method, path and body. */
export function fingerprint(request: HttpRequest): string {
  return `${request.method} ${request.path}\n${JSON.stringify(request.body ?? null)}`;
}

/** A line naming the operation and its slots, for progress and failure reports. */
export function describe(op: Op, model: Model): string {
  const who = (ix: number) => model.users[ix]?.username ?? `user ${ix}`;
  const { t, actor, ...rest } = op;
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${k === 'user' && typeof v === 'number' ? who(v) : String(v)}`)
    .join(' ');
  return `${t} by ${who(actor)}${fields ? ` (${fields})` : ''}`;
}
