import { z } from 'zod';
import { filterId } from './cursors.js';
import {
  accountSchema,
  amount,
  entrySchema,
  grantSchema,
  id,
  idempotent,
  money,
  page,
  payoutSchema,
  payoutStateSchema,
  purchaseSchema,
  tag,
} from './economy.js';
import { pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * The admins' economy tools (docs/economy.md): grants, the ledger of any account, payout
 * decisions, refunds and the ledger check. Others get 403 FORBIDDEN; each write is idempotent like
 * every economy write, and recorded in the audit log.
 */

export const adminGrant = operation('economy.admin.grant', {
  tag,
  summary: "Admins: credit a user's wallet from the platform's issuance account, with a reason.",
  rest: { method: 'POST', path: '/api/economy/admin/grants', status: 201, idempotencyKey: true },
  request: z.object({ ...idempotent, user_id: id, amount, reason: text(1, 500) }).strict(),
  response: grantSchema,
  errors: [401, 403, 404, 422],
});

export const adminLedger = operation('economy.admin.ledger', {
  tag,
  summary:
    "Admins: ledger entries newest first, of a user's accounts (`user_id`, optionally one `account`) or of one platform account (`account` alone).",
  rest: { method: 'GET', path: '/api/economy/admin/ledger' },
  request: z.object({ user_id: filterId.optional(), account: accountSchema.optional(), ...page }).strict(),
  response: pageOf(entrySchema),
  errors: [401, 403, 422],
});

export const adminPayouts = operation('economy.admin.payouts', {
  tag,
  summary: 'Admins: payout requests, oldest first, optionally in one state.',
  rest: { method: 'GET', path: '/api/economy/admin/payouts' },
  request: z.object({ state: payoutStateSchema.optional(), ...page }).strict(),
  response: pageOf(payoutSchema),
  errors: [401, 403, 422],
});

export const adminPayoutDecide = operation('economy.admin.payouts.decide', {
  tag,
  summary:
    'Admins: move a payout requested -> approved -> paid, or requested|approved -> rejected (funds back to available), from `expected_state`, the state the admin decided from. A payout no longer in `expected_state`, or any other move, 409 CONFLICT with current_state, nothing moved; of two deciders one wins.',
  rest: { method: 'PATCH', path: '/api/economy/admin/payouts/:payout_id', idempotencyKey: true },
  request: z
    .object({
      ...idempotent,
      payout_id: id,
      state: z.enum(['approved', 'paid', 'rejected']),
      expected_state: payoutStateSchema.describe(
        'The state the admin saw when deciding; if the payout has left it, the decision is refused (409 CONFLICT with current_state).',
      ),
      note: text(1, 2000).optional(),
    })
    .strict(),
  response: payoutSchema,
  errors: [401, 403, 404, 409, 422],
});

export const adminRefund = operation('economy.admin.refund', {
  tag,
  summary:
    "Admins: refund a purchase while its hold lasts (negated entries, one unit leaves the buyer's inventory); after the hold, or a second time, 409.",
  rest: { method: 'POST', path: '/api/economy/admin/purchases/:purchase_id/refund', idempotencyKey: true },
  request: z.object({ ...idempotent, purchase_id: id, reason: text(1, 500) }).strict(),
  response: purchaseSchema,
  errors: [401, 403, 404, 409, 422],
});

/** The most differences one verify answer lists; `difference_count` counts them all. */
export const VERIFY_DIFFERENCES_SHOWN = 100;

/** One way the ledger disagrees with itself (`atrium economy verify` prints the same objects). */
export const ledgerDifferenceSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('balance'),
    account_id: z.string(),
    account: z.string(),
    user_id: z.string().nullable(),
    stored: money,
    entries: money,
  }),
  z.object({ kind: z.literal('unbalanced_transaction'), transaction_id: z.string(), sum: money }),
  z.object({
    kind: z.literal('balance_after'),
    entry_id: z.string(),
    account_id: z.string(),
    stored: money,
    running: money,
  }),
]);

export const verifyReportSchema = z.object({
  /** True when every balance equals its entries' sum, every transaction sums to zero and every balance_after is its running sum. */
  ok: z.boolean(),
  verified_at: z.string(),
  difference_count: z.number().int(),
  /** The first VERIFY_DIFFERENCES_SHOWN differences; the CLI prints them all. */
  differences: z.array(ledgerDifferenceSchema),
});

export const adminVerify = operation('economy.admin.verify', {
  tag,
  summary:
    "Admins: `atrium economy verify` over the API: every stored balance against its entries' sum, every transaction's sum and every entry's balance_after, read in one snapshot.",
  rest: { method: 'GET', path: '/api/economy/admin/verify' },
  request: z.object({}).strict(),
  response: verifyReportSchema,
  errors: [401, 403, 422],
});

export const economyAdminOperations = [
  adminGrant,
  adminLedger,
  adminPayouts,
  adminPayoutDecide,
  adminRefund,
  adminVerify,
] as const;
