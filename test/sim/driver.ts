import type { Touched } from './checks.js';
import type { Client } from './client.js';
import { judge } from './judge.js';
import type { Model } from './model.js';
import { describe, type Op, requestOf, type Sent } from './ops.js';
import type { Answer, Timing } from './verdict.js';

/**
 * Sends the driver's operations and holds each answer against the model: one at a time, or as a
 * concurrent batch whose answers must fit some order of the batch (the service decides the order
 * of a race; any order the contract allows is accepted, and the state it leaves is the model's).
 */

export class SimFailure extends Error {
  constructor(
    readonly action: string,
    readonly expected: string,
    readonly happened: string,
  ) {
    super(`${action}: expected ${expected}, got ${happened}`);
  }
}

interface Answered {
  sent: Sent;
  answer: Answer;
  timing: Timing;
}

/** Batches larger than this are judged greedily only (every order of them is too many). */
const EXHAUSTIVE_UP_TO = 7;

export class Driver {
  /** Each user's writes in the order sent, for the replay and key-reuse actions. */
  readonly sent: Sent[][] = [];
  private step = 0;
  private keysThisStep = 0;
  private touched: Touched | undefined;
  /** What the step is doing, for a failure report. */
  action = '';
  /** The requests the step sent, for a failure report. */
  readonly stepRequests: string[] = [];
  /** Where each request is written as it is sent (`--trace`): the step, its key and its operation by slots. */
  trace: ((line: string) => void) | undefined;
  /** How often each operation met each answer (`purchase 409 INSUFFICIENT_FUNDS`), for the summary. */
  readonly outcomes = new Map<string, number>();

  constructor(
    readonly model: Model,
    readonly client: Client,
  ) {}

  begin(step: number, touched: Touched): void {
    this.step = step;
    this.client.step = step;
    this.stepRequests.length = 0;
    this.keysThisStep = 0;
    this.touched = touched;
    this.action = '';
  }

  /** A fresh Idempotency-Key: the step and a counter, the same on every run of the seed. */
  newKey(): string {
    return `sim-${this.step}-${this.keysThisStep++}`;
  }

  sentBy(user: number): Sent[] {
    this.sent[user] ??= [];
    return this.sent[user];
  }

  /** The request of `op` as the model stands, with a new key for a write (or `key`, reused). */
  prepare(op: Op, key?: string): Sent {
    const request = requestOf(this.model, op, key ?? this.newKey());
    if (op.t.startsWith('read.') || op.t === 'listing.cancel') delete request.key;
    const sent = { op, request };
    if (request.key !== undefined) this.sentBy(op.actor).push(sent);
    return sent;
  }

  /** Sends one request and judges its answer; a refusal the model does not allow fails the run. */
  async run(sent: Sent): Promise<Answer> {
    this.mark(sent);
    const { answer, timing } = await this.client.send(sent.request, this.model.user(sent.op.actor).token);
    const verdict = judge(this.model, sent, answer, timing);
    if (!verdict.ok) throw new SimFailure(this.label(sent), verdict.expected, show(answer));
    verdict.apply();
    this.tally(sent, answer);
    return answer;
  }

  /**
   * Sends every request of `batch` at once (`during` runs meanwhile: a fault) and judges the
   * answers: they must fit some order of the requests.
   */
  async runBatch(batch: Sent[], during?: () => Promise<void>): Promise<Answer[]> {
    for (const sent of batch) this.mark(sent);
    const sending = batch.map((sent) =>
      this.client.send(sent.request, this.model.user(sent.op.actor).token).then((r) => ({ sent, ...r })),
    );
    // Every request is waited for even when the fault fails (they stop retrying then), so none is
    // left running.
    const fault = during?.().catch((error: unknown) => {
      this.client.abandon();
      throw error;
    });
    const [faulted, ...answered] = await Promise.allSettled([fault, ...sending]);
    if (faulted?.status === 'rejected') throw faulted.reason;
    const results: Answered[] = [];
    for (const outcome of answered) {
      if (outcome.status === 'rejected') throw outcome.reason;
      results.push(outcome.value as Answered);
    }
    // Greedily first (the first request whose answer fits, then the next), which nearly always
    // finds an order; only when it does not, every order.
    const snapshot = this.model.snapshot();
    let fits = this.inSomeOrder(results, false);
    if (!fits) {
      this.model.restore(snapshot);
      const again = this.model.snapshot();
      fits = results.length <= EXHAUSTIVE_UP_TO && this.inSomeOrder(results, true);
      if (!fits) this.model.restore(again);
    }
    if (!fits) {
      const lines = results.map((r) => `    ${this.label(r.sent)} -> ${show(r.answer)}`);
      throw new SimFailure(
        `a concurrent batch of ${results.length}:\n${lines.join('\n')}`,
        'answers that some order of the batch gives',
        'answers no order of it gives (each above, in the order sent)',
      );
    }
    for (const r of results) this.tally(r.sent, r.answer);
    return results.map((r) => r.answer);
  }

  /** Applies `pending` in an order in which each answer is legal: the first fitting one first, then every order. */
  private inSomeOrder(pending: Answered[], exhaustive: boolean): boolean {
    if (pending.length === 0) return true;
    for (let i = 0; i < pending.length; i++) {
      const r = pending[i] as Answered;
      const verdict = judge(this.model, r.sent, r.answer, r.timing);
      if (!verdict.ok) continue;
      if (!exhaustive) {
        verdict.apply();
        return this.inSomeOrder(
          pending.filter((_, j) => j !== i),
          false,
        );
      }
      const snapshot = this.model.snapshot();
      verdict.apply();
      if (
        this.inSomeOrder(
          pending.filter((_, j) => j !== i),
          true,
        )
      )
        return true;
      this.model.restore(snapshot);
    }
    return false;
  }

  private tally(sent: Sent, answer: Answer): void {
    const code = (answer.body as { code?: unknown } | null)?.code;
    const name = `${sent.op.t} ${answer.status}${typeof code === 'string' ? ` ${code}` : ''}${answer.replayed ? ' replayed' : ''}`;
    this.outcomes.set(name, (this.outcomes.get(name) ?? 0) + 1);
  }

  private mark(sent: Sent): void {
    this.trace?.(`${this.step} ${sent.request.key ?? '-'} ${describe(sent.op, this.model)}`);
    this.stepRequests.push(this.label(sent));
    const t = this.touched;
    if (!t) return;
    const { op, request } = sent;
    t.users.add(op.actor);
    if (request.key !== undefined) t.keys.push({ user: op.actor, key: request.key });
    const m = this.model;
    const listing = (slot: number) => {
      const l = m.listings[slot];
      if (!l) return;
      t.listings.add(slot);
      t.users.add(l.seller);
      t.items.add(l.item);
    };
    switch (op.t) {
      case 'grant':
        if (op.user !== null) t.users.add(op.user);
        break;
      case 'item.create':
      case 'item.state': {
        const slot = op.t === 'item.create' ? op.slot : op.item;
        t.items.add(slot);
        for (const l of m.listings) if (l.item === slot) t.listings.add(l.slot);
        break;
      }
      case 'listing.create':
        t.items.add(op.item);
        listing(op.slot);
        break;
      case 'listing.cancel':
        listing(op.listing);
        break;
      case 'purchase':
        t.purchases.add(op.slot);
        listing(op.listing);
        break;
      case 'refund': {
        t.purchases.add(op.purchase);
        const p = m.purchases[op.purchase];
        if (p) {
          t.users.add(p.buyer);
          listing(p.listing);
        }
        break;
      }
      case 'payout.request':
        t.payouts.add(op.slot);
        break;
      case 'payout.decide': {
        t.payouts.add(op.payout);
        const p = m.payouts[op.payout];
        if (p) t.users.add(p.user);
        break;
      }
    }
  }

  label(sent: Sent): string {
    const { method, path, body, key } = sent.request;
    const shown = body === undefined ? '' : ` ${JSON.stringify(body)}`;
    return `${describe(sent.op, this.model)}: ${method} ${path}${shown}${key ? ` [key ${key}]` : ''}`;
  }
}

export function show(answer: Answer): string {
  const body = answer.body === null ? '' : ` ${JSON.stringify(answer.body)}`;
  return `${answer.status}${answer.replayed ? ' (Idempotent-Replayed)' : ''}${body}`;
}
