import { isDeepStrictEqual } from 'node:util';
import { judgeMarket } from './judge-market.js';
import { judgeMoney } from './judge-money.js';
import type { Model } from './model.js';
import { fingerprint, requestOf, type Sent } from './ops.js';
import { type Answer, no, ok, refusal, type Timing, type Verdict } from './verdict.js';

/**
 * The verdict on one answer. Writes go through their Idempotency-Key first: a key with a stored
 * answer replays it identically (same status, same body, `Idempotent-Replayed: true`) or, for
 * another request, answers 422 IDEMPOTENCY_KEY_REUSED; a key without one runs the request.
 */
export function judge(model: Model, sent: Sent, answer: Answer, timing: Timing): Verdict {
  const { op, request } = sent;
  if (op.t === 'payout.request' && op.amount < model.settings.payoutMinimum) {
    // Refused before the key is looked at: a bad amount is a bad request, whatever the key.
    return notReplayed(
      answer,
      refusal(answer, 422, 'VALIDATION_FAILED', { minimum: model.settings.payoutMinimum }),
    );
  }
  if (request.key === undefined) return notReplayed(answer, judgeOp(model, sent, answer, timing));
  const keyId = `${op.actor}|${request.key}`;
  const stored = model.keys.get(keyId);
  const print = fingerprint(request);
  if (stored) {
    if (stored.fingerprint !== print) {
      return notReplayed(answer, refusal(answer, 422, 'IDEMPOTENCY_KEY_REUSED'));
    }
    const expected = `a replay of the first answer: ${stored.status} ${JSON.stringify(stored.body)} with Idempotent-Replayed: true`;
    if (!answer.replayed || answer.status !== stored.status) return no(expected);
    return isDeepStrictEqual(answer.body, stored.body) ? ok() : no(expected);
  }
  // A replay of a key never answered is legal only when an attempt's answer was lost: the first
  // attempt ran, and this is its answer.
  const verdict =
    answer.replayed && timing.uncertain
      ? judgeOp(model, sent, answer, timing)
      : notReplayed(answer, judgeOp(model, sent, answer, timing));
  if (!verdict.ok || answer.status >= 300) return verdict;
  return ok(() => {
    verdict.apply();
    model.keys.set(keyId, { fingerprint: print, status: answer.status, body: answer.body });
  });
}

function notReplayed(answer: Answer, verdict: Verdict): Verdict {
  if (!answer.replayed) return verdict;
  return no(
    `${verdict.ok ? 'the same answer' : verdict.expected} without Idempotent-Replayed (nothing stored to replay)`,
  );
}

function judgeOp(model: Model, sent: Sent, answer: Answer, timing: Timing): Verdict {
  // A write sent again (a replay whose first run stored nothing) carries the ids its slots held
  // when it was first sent: a placeholder for a slot filled since names nothing.
  const now = requestOf(model, sent.op, sent.request.key ?? '');
  if (now.path !== sent.request.path || JSON.stringify(now.body) !== JSON.stringify(sent.request.body)) {
    return refusal(answer, 404, 'NOT_FOUND');
  }
  return judgeMarket(model, sent.op, answer, timing) ?? judgeMoney(model, sent.op, answer, timing);
}
