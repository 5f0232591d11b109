import type { z } from 'zod';
import {
  accountSchema,
  type Entry,
  type grantSchema,
  type Payout,
  type Purchase,
  payoutStateSchema,
} from '../../../../protocol/economy.js';
import {
  adminGrant,
  adminLedger,
  adminPayoutDecide,
  adminPayouts,
  adminRefund,
  adminVerify,
  type verifyReportSchema,
} from '../../../../protocol/economy-admin.js';
import { type Html, html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  field,
  idempotencyField,
  nextPage,
  type PageContext,
  postForm,
  problemBox,
  select,
  table,
  when,
} from '../page.js';

/**
 * The economy's admin tools over its `economy.admin.*` operations: the ledger check, a ledger
 * search, grants and refunds on one page, and the payout queue on another. Writes carry an
 * Idempotency-Key made when the form was drawn, so a form submitted twice moves money once.
 */

const PATH = '/console/economy';
const PAYOUTS = '/console/economy/payouts';
const PAGE_SIZE = 25;

export const economyPage: ConsolePage = {
  path: PATH,
  title: 'Economy',
  role: 'admin',
  async render(ctx) {
    return html`${await verifySection(ctx)}${await ledgerSection(ctx)}
<div class="columns">
<section aria-labelledby="grant"><h2 id="grant">Grant coins</h2>
${postForm(
  ctx,
  `${PATH}/grants`,
  html`${idempotencyField()}${field('grant-user', 'User id', { name: 'user_id', required: true, max: 64 })}
${field('grant-amount', 'Amount (coin)', { name: 'amount', type: 'number', required: true })}
${field('grant-reason', 'Reason', { name: 'reason', required: true, max: 500 })}`,
  'Grant',
  { progress: 'Granting…' },
)}</section>
<section aria-labelledby="refund"><h2 id="refund">Refund a purchase</h2>
${postForm(
  ctx,
  `${PATH}/refunds`,
  html`${idempotencyField()}${field('refund-purchase', 'Purchase id', { name: 'purchase_id', required: true, max: 64 })}
${field('refund-reason', 'Reason', { name: 'reason', required: true, max: 500 })}`,
  'Refund',
  { progress: 'Refunding…' },
)}</section>
</div>`;
  },
};

async function verifySection(ctx: PageContext): Promise<Html> {
  const form = html`<form method="get" action="${PATH}" data-progress="Verifying the ledger…" aria-label="Verify the ledger">
<input type="hidden" name="verify" value="1"><button type="submit">Verify the ledger</button></form>`;
  let result: Html | string =
    html`<p class="hint">Recomputes every balance from the ledger in one snapshot, as <code>atrium economy verify</code> does; on a large ledger it takes a while.</p>`;
  if (ctx.query.verify === '1') {
    const answer = await ctx.api<z.infer<typeof verifyReportSchema>>(apiCall(adminVerify));
    if (!answer.ok) result = problemBox(answer.problem);
    else if (answer.body.ok)
      result = html`<p class="ok" role="status">Verified ${when(answer.body.verified_at)}: every balance equals the sum of its entries.</p>`;
    else
      result = html`<div class="problem" role="alert"><strong>${answer.body.difference_count} difference(s) at ${when(answer.body.verified_at)}</strong>
<ul>${answer.body.differences.map((difference) => html`<li><code>${JSON.stringify(difference)}</code></li>`)}</ul>
<p>See docs/economy.md, “Verify and reconcile”.</p></div>`;
  }
  return html`<section aria-labelledby="verify"><h2 id="verify">Ledger check</h2>${form}${result}</section>`;
}

async function ledgerSection(ctx: PageContext): Promise<Html> {
  const userId = ctx.query.user_id ?? '';
  const account = ctx.query.account ?? '';
  const form = html`<form method="get" action="${PATH}" class="filters" aria-label="Search the ledger">
${field('ledger-user', 'User id', { name: 'user_id', value: userId, max: 64 })}
${select('ledger-account', 'Account', ['', ...accountSchema.options], account, 'account')}
<button type="submit">Search</button></form>`;
  if (!userId && !account) {
    return html`<section aria-labelledby="ledger"><h2 id="ledger">Ledger</h2>${form}<p class="hint">A user id (optionally one account), or a platform account alone.</p></section>`;
  }
  const answer = await ctx.api<{ items: Entry[]; next_cursor: string | null }>(
    apiCall(adminLedger, { query: { user_id: userId, account, limit: PAGE_SIZE, cursor: ctx.query.cursor } }),
  );
  const body = answer.ok
    ? html`${table(
        'Ledger entries, newest first',
        ['When', 'Account', 'User', 'Kind', 'Amount', 'Balance after', 'Transaction'],
        answer.body.items.map(
          (
            entry,
          ) => html`<tr><td>${when(entry.created_at)}</td><td>${entry.account}</td><td><code>${entry.user_id ?? '—'}</code></td>
<td>${entry.kind}</td><td class="num">${entry.amount}</td><td class="num">${entry.balance_after}</td><td><code>${entry.transaction_id}</code></td></tr>`,
        ),
      )}${nextPage(PATH, { user_id: userId, account }, answer.body.next_cursor)}`
    : problemBox(answer.problem);
  return html`<section aria-labelledby="ledger"><h2 id="ledger">Ledger</h2>${form}${body}</section>`;
}

export const payoutsPage: ConsolePage = {
  path: PAYOUTS,
  title: 'Payouts',
  role: 'admin',
  async render(ctx) {
    const state = payoutStateSchema.options.includes(ctx.query.state as Payout['state'])
      ? (ctx.query.state as string)
      : 'requested';
    const answer = await ctx.api<{ items: Payout[]; next_cursor: string | null }>(
      apiCall(adminPayouts, { query: { state, limit: PAGE_SIZE, cursor: ctx.query.cursor } }),
    );
    const filter = html`<form method="get" action="${PAYOUTS}" class="filters" aria-label="Filter payouts">
${select('payout-state', 'State', payoutStateSchema.options, state, 'state')}<button type="submit">Show</button></form>`;
    if (!answer.ok) return html`${filter}${problemBox(answer.problem)}`;
    return html`${filter}${table(
      `Payouts ${state}, oldest first`,
      ['Requested', 'User', 'Amount', 'State', 'Note', 'Decide'],
      answer.body.items.map(
        (payout) => html`<tr><td>${when(payout.created_at)}</td><td><code>${payout.user_id ?? '—'}</code></td>
<td class="num">${payout.amount}</td><td>${payout.state}</td><td>${payout.note ?? ''}</td><td>${decisionForms(ctx, payout)}</td></tr>`,
      ),
    )}${nextPage(PAYOUTS, { state }, answer.body.next_cursor)}`;
  },
};

/** The moves a payout's state allows (docs/economy.md): requested -> approved -> paid, or rejected. */
const MOVES: Record<string, { state: string; label: string }[]> = {
  requested: [
    { state: 'approved', label: 'Approve' },
    { state: 'rejected', label: 'Reject' },
  ],
  approved: [
    { state: 'paid', label: 'Mark paid' },
    { state: 'rejected', label: 'Reject' },
  ],
};

/**
 * Each form carries the state the payout was shown in: should it have moved since (another admin
 * decided it), the API refuses the decision with 409 rather than apply it to a state nobody saw.
 */
function decisionForms(ctx: PageContext, payout: Payout): Html {
  return html`${(MOVES[payout.state] ?? []).map((move) =>
    postForm(
      ctx,
      `${PAYOUTS}/${segment(payout.id)}`,
      html`${idempotencyField()}<input type="hidden" name="state" value="${move.state}">
<input type="hidden" name="expected_state" value="${payout.state}">`,
      move.label,
      {
        className: 'inline',
        label: `${move.label} the payout of ${payout.amount} coin`,
        progress: 'Deciding…',
      },
    ),
  )}`;
}

export const economyActions: ConsoleAction[] = [
  {
    path: `${PATH}/grants`,
    summary: `Grant coins to a user (${routeOf(adminGrant)}).`,
    role: 'admin',
    back: PATH,
    call: (form) =>
      apiCall(adminGrant, {
        idempotencyKey: form.idempotency_key,
        body: { user_id: form.user_id, amount: wholeNumber(form.amount), reason: form.reason },
      }),
    done: (answer) => {
      const grant = answer as z.infer<typeof grantSchema>;
      return `Granted ${grant.amount} coin to ${grant.user_id}; their wallet holds ${grant.balance}.`;
    },
  },
  {
    path: `${PATH}/refunds`,
    summary: `Refund a purchase while its hold lasts (${routeOf(adminRefund)}).`,
    role: 'admin',
    back: PATH,
    call: (form) =>
      apiCall(adminRefund, {
        params: { purchase_id: form.purchase_id ?? '' },
        idempotencyKey: form.idempotency_key,
        body: { reason: form.reason },
      }),
    done: (answer) => `Purchase ${(answer as Purchase).id} refunded.`,
  },
  {
    path: `${PAYOUTS}/:payout_id`,
    summary: `Approve, pay or reject a payout (${routeOf(adminPayoutDecide)}).`,
    role: 'admin',
    back: PAYOUTS,
    call: (form, params) =>
      apiCall(adminPayoutDecide, {
        params: { payout_id: params.payout_id ?? '' },
        idempotencyKey: form.idempotency_key,
        body: { state: form.state, expected_state: form.expected_state },
      }),
    done: (answer) => `Payout of ${(answer as Payout).amount} coin is now ${(answer as Payout).state}.`,
  },
];

/** A form's number as the API's integer, or the text itself so the API names the field it refuses. */
function wholeNumber(text: string | undefined): number | string | undefined {
  return text !== undefined && /^\d{1,13}$/.test(text) ? Number(text) : text;
}
