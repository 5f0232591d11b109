import type { Payout, Purchase } from '../../../protocol/economy.js';
import type { NotificationRequest } from '../notifications/index.js';

/**
 * The economy's notifications (docs/notifications.md, "What the system notifies"). Both come
 * from the system, not from a user (`sender_id` null): a seller is not told who bought, nor a
 * creator which admin decided.
 */

/** The seller told of one purchase of their listing. */
export const itemSoldNote = (
  purchase: Purchase & { seller_id: string },
  item: { id: string; name: string },
): NotificationRequest => ({
  userId: purchase.seller_id,
  code: 'economy.item_sold',
  subject: `Your item ${item.name} sold for ${purchase.price} ${purchase.currency}`,
  content: {
    purchase_id: purchase.id,
    listing_id: purchase.listing_id,
    item,
    price: purchase.price,
    seller_amount: purchase.seller_amount,
    currency: purchase.currency,
  },
  senderId: null,
});

/** The payout's creator told of an admin's decision on it, with the payout's note after it. */
export const payoutDecidedNote = (payout: Payout & { user_id: string }): NotificationRequest => ({
  userId: payout.user_id,
  code: 'economy.payout_decided',
  subject: `Your payout of ${payout.amount} ${payout.currency} was ${payout.state}`,
  content: {
    payout_id: payout.id,
    state: payout.state,
    amount: payout.amount,
    currency: payout.currency,
    note: payout.note,
  },
  senderId: null,
});
