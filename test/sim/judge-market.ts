import type { ItemSlot, Model, PurchaseSlot } from './model.js';
import type { Op } from './ops.js';
import type { Answer, Timing, Verdict } from './verdict.js';
import { anyOf, bodyOf, no, ok, refusal, servedWithin, success } from './verdict.js';

/** The catalog, listings, purchases and refunds (docs/economy.md): each request's legal answers. */
export function judgeMarket(model: Model, op: Op, answer: Answer, timing: Timing): Verdict | undefined {
  switch (op.t) {
    case 'item.create':
      return itemCreate(model, op, answer);
    case 'item.state':
      return itemState(model, op, answer);
    case 'listing.create':
      return listingCreate(model, op, answer);
    case 'listing.cancel':
      return listingCancel(model, op, answer);
    case 'purchase':
      return purchase(model, op, answer, timing);
    case 'refund':
      return refund(model, op, answer, timing);
    default:
      return undefined;
  }
}

function itemCreate(model: Model, op: Extract<Op, { t: 'item.create' }>, answer: Answer): Verdict {
  const slot = model.items[op.slot] as ItemSlot;
  const fields = { creator_id: model.user(op.actor).id, state: 'draft', consumable: op.consumable };
  return success(answer, 201, fields, () => {
    slot.id = bodyOf(answer).id as string;
    model.created('item', slot.id);
  });
}

const ITEM_MOVES: Record<string, readonly string[]> = {
  draft: ['published', 'retired'],
  published: ['retired'],
  retired: [],
};

function itemState(model: Model, op: Extract<Op, { t: 'item.state' }>, answer: Answer): Verdict {
  const item = model.items[op.item];
  if (!item?.id) return refusal(answer, 404, 'NOT_FOUND');
  if (item.creator !== op.actor) {
    return item.state === 'draft' ? refusal(answer, 404, 'NOT_FOUND') : refusal(answer, 403, 'FORBIDDEN');
  }
  if (item.state !== op.state && !ITEM_MOVES[item.state]?.includes(op.state)) {
    return refusal(answer, 409, 'CONFLICT', { current_state: item.state });
  }
  return success(answer, 200, { id: item.id, state: op.state }, () => {
    if (item.state === op.state) return;
    item.state = op.state;
    if (op.state !== 'retired') return;
    // Retiring cancels the item's active listings in the same transaction.
    for (const listing of model.listings) {
      if (listing.item === item.slot && listing.state === 'active') listing.state = 'cancelled';
    }
  });
}

function listingCreate(model: Model, op: Extract<Op, { t: 'listing.create' }>, answer: Answer): Verdict {
  const item = model.items[op.item];
  const slot = model.listings[op.slot];
  if (!slot) return no(`a listing slot ${op.slot}`);
  if (!item?.id || (item.state === 'draft' && item.creator !== op.actor))
    return refusal(answer, 404, 'NOT_FOUND');
  if (item.creator !== op.actor) return refusal(answer, 403, 'FORBIDDEN');
  if (item.state !== 'published') return refusal(answer, 409, 'CONFLICT', { current_state: item.state });
  const fields = {
    item_id: item.id,
    seller_id: model.user(op.actor).id,
    price: op.price,
    quantity: op.quantity,
    sold_count: 0,
    state: 'active',
  };
  return success(answer, 201, fields, () => {
    slot.id = bodyOf(answer).id as string;
    model.created('listing', slot.id);
  });
}

function listingCancel(model: Model, op: Extract<Op, { t: 'listing.cancel' }>, answer: Answer): Verdict {
  const listing = model.listings[op.listing];
  if (!listing?.id) return refusal(answer, 404, 'NOT_FOUND');
  if (listing.seller !== op.actor && !model.user(op.actor).admin) return refusal(answer, 403, 'FORBIDDEN');
  if (listing.state === 'sold') return refusal(answer, 409, 'CONFLICT', { current_state: 'sold' });
  if (answer.status !== 204) return no('204');
  return ok(() => {
    listing.state = 'cancelled';
  });
}

function purchase(model: Model, op: Extract<Op, { t: 'purchase' }>, answer: Answer, timing: Timing): Verdict {
  const listing = model.listings[op.listing];
  const slot = model.purchases[op.slot] as PurchaseSlot;
  if (!listing?.id) return refusal(answer, 404, 'NOT_FOUND');
  if (listing.state !== 'active') return refusal(answer, 409, 'CONFLICT', { current_state: listing.state });
  if (listing.seller === op.actor) return refusal(answer, 422, 'VALIDATION_FAILED');
  const item = model.items[listing.item] as ItemSlot;
  const buyer = model.user(op.actor);
  const itemId = item.id as string;
  if (!item.consumable && (buyer.inventory[itemId] ?? 0) > 0) return refusal(answer, 409, 'ALREADY_OWNED');
  const wallet = buyer.accounts.wallet;
  const price = listing.price;
  if (wallet < price) return refusal(answer, 409, 'INSUFFICIENT_FUNDS', { balance: wallet, required: price });
  const fee = model.fee(price);
  const body = bodyOf(answer);
  const fields = {
    listing_id: listing.id,
    item_id: itemId,
    buyer_id: buyer.id,
    seller_id: model.user(listing.seller).id,
    price,
    fee,
    seller_amount: price - fee,
    currency: 'coin',
    state: 'completed',
    refund_transaction_id: null,
  };
  const held = Date.parse(String(body.hold_until)) - Date.parse(String(body.created_at));
  if (answer.status === 201 && (!servedWithin(body.created_at, timing) || held !== model.settings.holdMs)) {
    return no(
      `a purchase made between ${iso(timing.sentAt)} and ${iso(timing.answeredAt)}, held ${model.settings.holdMs} ms`,
    );
  }
  return success(answer, 201, fields, () => {
    Object.assign(slot, {
      id: body.id as string,
      seller: listing.seller,
      itemId,
      price,
      fee,
      sellerAmount: price - fee,
      holdUntil: Date.parse(String(body.hold_until)),
      state: 'completed',
      released: false,
      answer: body,
      transactionId: body.transaction_id as string,
    });
    model.created('purchase', slot.id as string);
    model.hold(slot);
    model.post('purchase', model.purchaseEntries(slot), slot.transactionId);
    listing.soldCount += 1;
    if (listing.quantity !== null && listing.soldCount === listing.quantity) listing.state = 'sold';
    buyer.inventory[itemId] = item.consumable ? (buyer.inventory[itemId] ?? 0) + 1 : 1;
  });
}

function refund(model: Model, op: Extract<Op, { t: 'refund' }>, answer: Answer, timing: Timing): Verdict {
  const p = model.purchases[op.purchase];
  if (!p?.id) return refusal(answer, 404, 'NOT_FOUND');
  if (p.state === 'refunded') return refusal(answer, 409, 'CONFLICT', { current_state: 'refunded' });
  const over = refusal(answer, 409, 'CONFLICT', { current_state: 'completed' });
  if (p.released || p.holdUntil <= timing.sentAt - 1) return over;
  const body = bodyOf(answer);
  const refunded = success(
    answer,
    200,
    { ...p.answer, state: 'refunded', refund_transaction_id: body.refund_transaction_id },
    () => {
      const refundTx = body.refund_transaction_id as string;
      p.state = 'refunded';
      p.refundTransactionId = refundTx;
      model.unhold(p);
      const entries = model
        .purchaseEntries(p)
        .map((e) => ({ ...e, kind: 'refund' as const, amount: -e.amount }));
      model.post('refund', entries, refundTx);
      const buyer = model.user(p.buyer);
      const left = (buyer.inventory[p.itemId] ?? 0) - 1;
      if (left > 0) buyer.inventory[p.itemId] = left;
      else delete buyer.inventory[p.itemId];
    },
  );
  if (refunded.ok && typeof body.refund_transaction_id !== 'string') return no('a refund transaction id');
  if (p.holdUntil > timing.answeredAt + 1) return refunded;
  // The hold ended while the request was served: the refund may have come before it or after.
  const verdict = anyOf(refunded, over);
  return verdict.ok
    ? ok(() => {
        model.decidedByTiming.refunds++;
        verdict.apply();
      })
    : verdict;
}

const iso = (ms: number) => new Date(ms).toISOString();
