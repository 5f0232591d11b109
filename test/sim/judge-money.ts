import type { ExpectedEntry, Model, PayoutSlot, PayoutState } from './model.js';
import type { Op } from './ops.js';
import type { Answer, Timing, Verdict } from './verdict.js';
import { bodyOf, no, ok, refusal, success } from './verdict.js';

/** Grants, payouts and the balance reads (docs/economy.md): each request's legal answers. */
export function judgeMoney(model: Model, op: Op, answer: Answer, timing: Timing): Verdict {
  switch (op.t) {
    case 'grant':
      return grant(model, op, answer);
    case 'payout.request':
      return payoutRequest(model, op, answer, timing);
    case 'payout.decide':
      return decide(model, op, answer);
    case 'read.wallet': {
      const user = model.user(op.actor);
      return success(
        answer,
        200,
        { user_id: user.id, balance: user.accounts.wallet, currency: 'coin' },
        () => {},
      );
    }
    case 'read.creator':
      return creatorBalance(model, op.actor, answer, timing);
    case 'read.inventory': {
      const item = model.items[op.item];
      const held = item?.id ? (model.user(op.actor).inventory[item.id] ?? 0) : 0;
      const items = bodyOf(answer).items as { item_id: string; quantity: number }[] | undefined;
      const got = items?.map((row) => `${row.item_id}:${row.quantity}`).join(',');
      const want = held > 0 ? `${item?.id}:${held}` : '';
      if (answer.status !== 200 || got !== want) return no(`200 with inventory [${want}]`);
      return success(answer, 200, {}, () => {});
    }
    default:
      return no(`an operation the model knows, not ${op.t}`);
  }
}

function grant(model: Model, op: Extract<Op, { t: 'grant' }>, answer: Answer): Verdict {
  if (op.user === null) return refusal(answer, 404, 'NOT_FOUND');
  const user = model.user(op.user);
  const fields = {
    user_id: user.id,
    amount: op.amount,
    currency: 'coin',
    balance: user.accounts.wallet + op.amount,
  };
  return success(answer, 201, fields, () => {
    model.post(
      'grant',
      [
        { account: 'platform_issuance', user: null, kind: 'grant', amount: -op.amount },
        { account: 'wallet', user: op.user, kind: 'grant', amount: op.amount },
      ],
      bodyOf(answer).transaction_id as string,
    );
  });
}

/**
 * A payout request first releases the creator's due holds, at a time the model knows only within
 * the request's round trip: what was available then lies between what was due at its start and
 * at its end.
 */
function payoutRequest(
  model: Model,
  op: Extract<Op, { t: 'payout.request' }>,
  answer: Answer,
  timing: Timing,
): Verdict {
  const user = model.user(op.actor);
  const slot = model.payouts[op.slot] as PayoutSlot;
  const least = user.accounts.creator_available + model.dueFor(op.actor, timing.sentAt - 1);
  const most = user.accounts.creator_available + model.dueFor(op.actor, timing.answeredAt + 1);
  const timed = () => {
    if (least < op.amount && op.amount <= most) model.decidedByTiming.payouts++;
  };
  if (answer.status === 409) {
    const balance = bodyOf(answer).balance as number;
    if (op.amount <= least || balance < least || balance > most || balance >= op.amount) {
      return no(
        `${op.amount <= least ? '201' : `409 INSUFFICIENT_FUNDS with balance in [${least}, ${most}]`}`,
      );
    }
    const verdict = refusal(answer, 409, 'INSUFFICIENT_FUNDS', { required: op.amount });
    return verdict.ok ? ok(timed) : verdict;
  }
  if (op.amount > most) return no(`409 INSUFFICIENT_FUNDS (available at most ${most}, asked ${op.amount})`);
  const fields = {
    user_id: user.id,
    amount: op.amount,
    currency: 'coin',
    state: 'requested',
    note: null,
    decided_by: null,
  };
  return success(answer, 201, fields, () => {
    timed();
    slot.id = bodyOf(answer).id as string;
    slot.state = 'requested';
    const move = transfer(op.actor, 'creator_available', 'creator_payout', op.amount);
    slot.moves.push(move);
    model.created('payout', slot.id);
    model.post('payout', move, null);
  });
}

const DECISIONS: Record<PayoutState, readonly PayoutState[]> = {
  requested: ['approved', 'rejected'],
  approved: ['paid', 'rejected'],
  paid: [],
  rejected: [],
};

/** An admin's decision, made from `expected`: a stale or illegal one is 409 with the current state. */
function decide(model: Model, op: Extract<Op, { t: 'payout.decide' }>, answer: Answer): Verdict {
  const payout = model.payouts[op.payout];
  if (!payout?.id) return refusal(answer, 404, 'NOT_FOUND');
  if (op.expected !== payout.state || !DECISIONS[payout.state].includes(op.state)) {
    return refusal(answer, 409, 'CONFLICT', { current_state: payout.state });
  }
  const fields = {
    id: payout.id,
    state: op.state,
    amount: payout.amount,
    decided_by: model.user(op.actor).id,
    note: op.note ?? payout.note,
  };
  return success(answer, 200, fields, () => {
    payout.state = op.state;
    payout.note = op.note ?? payout.note;
    if (op.state === 'approved') return;
    const move =
      op.state === 'paid'
        ? transfer(payout.user, 'creator_payout', 'platform_payouts', payout.amount)
        : transfer(payout.user, 'creator_payout', 'creator_available', payout.amount);
    payout.moves.push(move);
    model.post('payout', move, null);
    if (op.state === 'paid') model.user(payout.user).paidOut += payout.amount;
  });
}

function transfer(
  user: number,
  from: ExpectedEntry['account'],
  to: ExpectedEntry['account'],
  amount: number,
): ExpectedEntry[] {
  return [
    { account: from, user, kind: 'payout', amount: -amount },
    { account: to, user: to.startsWith('platform_') ? null : user, kind: 'payout', amount },
  ];
}

/** The creator balances: exact but for holds the release job may have moved since the model looked. */
function creatorBalance(model: Model, ix: number, answer: Answer, timing: Timing): Verdict {
  const { accounts, paidOut } = model.user(ix);
  const body = bodyOf(answer);
  const released = (body.available as number) - accounts.creator_available;
  const due = model.dueFor(ix, timing.answeredAt + 1);
  if (answer.status === 200 && (released < 0 || released > due)) {
    return no(`available between ${accounts.creator_available} and ${accounts.creator_available + due}`);
  }
  const fields = {
    pending: accounts.creator_pending - released,
    in_payout: accounts.creator_payout,
    paid_out: paidOut,
    currency: 'coin',
  };
  return success(answer, 200, fields, () => {});
}
