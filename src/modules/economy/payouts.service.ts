import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import { type Payout, type PayoutState, payoutsCreate } from '../../../protocol/economy.js';
import { adminPayoutDecide } from '../../../protocol/economy-admin.js';
import { type Announcement, type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeIdKeyParams } from '../../platform/cursor.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { idOr, newId } from '../../platform/ids.js';
import type { Outbox } from '../../platform/outbox.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import { insufficientFunds, platformAccount, userAccount } from './accounts.js';
import type { IdempotentWrites, KeyedInput } from './idempotency.js';
import { ensureAccounts, lockAccounts, type Movement, post } from './ledger.repository.js';
import { payoutDecidedNote } from './notes.js';
import { decidePayout, insertPayout, payoutById, payoutQueue, payoutsOf } from './payouts.repository.js';
import { releaseHolds } from './release.js';
import { balanceAnnouncements, conflictIn, toPayout } from './views.js';

export interface PayoutsDeps {
  writes: IdempotentWrites;
  bus: EventBus;
  minimum: number;
  createLimiter: RateLimiterAbstract;
  /** Admins' decisions are recorded in the audit log, in their transaction. */
  audit: Pick<AuditApi, 'record'>;
  /** `economy.payout.requested` is recorded in the request's transaction, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'record'>;
  /** The creator's `economy.payout_decided`, stored in the decision's transaction and announced after it. */
  notifications: Pick<NotificationsApi, 'store' | 'announce'>;
}

type Page = { limit: number; cursor?: string | undefined };
type Decision = Exclude<PayoutState, 'requested'>;

/** The audit log's name of each decision. */
const DECISION_ACTIONS: Record<Decision, string> = {
  approved: 'economy.payouts.approve',
  paid: 'economy.payouts.pay',
  rejected: 'economy.payouts.reject',
};

const PAYOUT_REQUESTED = 'economy.payout.requested';
const noSuchPayout = () => new AppError(ErrorCode.NOT_FOUND, 'No such payout.');
const PAID_OUT = platformAccount('platform_payouts');

/** The moves an admin may make: requested -> approved -> paid, requested|approved -> rejected. */
const ALLOWED: Record<PayoutState, readonly Decision[]> = {
  requested: ['approved', 'rejected'],
  approved: ['paid', 'rejected'],
  paid: [],
  rejected: [],
};

/**
 * Creator payouts: a request moves available earnings into creator_payout, where they wait for an
 * admin. Paid, they leave for platform_payouts; rejected, they go back to available.
 */
export class PayoutsService {
  constructor(private readonly deps: PayoutsDeps) {}

  request(ctx: Ctx, input: KeyedInput & { amount: number }): Promise<Payout> {
    const me = callerOf(ctx).id;
    if (input.amount < this.deps.minimum) {
      throw new AppError(ErrorCode.VALIDATION_FAILED, `A payout is at least ${this.deps.minimum}.`, {
        errors: [{ path: 'body.amount', message: `must be at least ${this.deps.minimum}` }],
        details: { minimum: this.deps.minimum },
      });
    }
    return this.deps.writes.runOnce(ctx, payoutsCreate, input, async (tx, key) => {
      await consumeOrThrow(this.deps.createLimiter, me, 'Too many requests; wait before making more.');
      const at = ctx.now();
      const available = userAccount(me, 'creator_available');
      const inPayout = userAccount(me, 'creator_payout');
      await ensureAccounts(tx, [available, inPayout], at);
      // The caller's due holds first, so what came due counts as available.
      const released = await releaseHolds(tx, {
        at,
        sellerId: me,
        limit: 10_000,
        skipLocked: false,
        alsoLock: [available.id, inPayout.id],
      });
      const balance = released.balances.get(available.id) ?? 0;
      if (balance < input.amount) throw insufficientFunds(balance, input.amount);
      const row = await insertPayout(tx, {
        id: newId(),
        userId: me,
        amount: input.amount,
        availableAccountId: available.id,
        payoutAccountId: inPayout.id,
        at,
      });
      const { entries } = await post(tx, { kind: 'payout', payoutId: row.id, actorId: me, at }, [
        { accountId: available.id, kind: 'payout', amount: -input.amount },
        { accountId: inPayout.id, kind: 'payout', amount: input.amount },
      ]);
      const payout = toPayout(row);
      if (this.deps.outbox.hasConsumers(PAYOUT_REQUESTED)) {
        const event: DomainEventData[typeof PAYOUT_REQUESTED] = { payout };
        await this.deps.outbox.record(tx, PAYOUT_REQUESTED, event);
      }
      return {
        answer: await key.store(payout),
        afterCommit: () =>
          this.deps.bus.publishAllCommitted(
            [...balanceAnnouncements([...released.entries, ...entries]), ...payoutAnnouncement(payout)],
            ctx.log,
          ),
      };
    });
  }

  async get(ctx: Ctx, payoutId: string): Promise<Payout> {
    const caller = callerOf(ctx);
    const row = await payoutById(ctx.data, idOr(payoutId, noSuchPayout));
    if (!row || (row.user_id !== caller.id && !hasRole(caller, 'admin'))) throw noSuchPayout();
    return toPayout(row);
  }

  async list(ctx: Ctx, query: Page) {
    const me = callerOf(ctx).id;
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await payoutsOf(ctx.data, me, timeIdKeyParams(after), query.limit + 1);
    return pageFrom(rows, query.limit, toPayout, (row) => [row.created_key, row.id]);
  }

  async queue(ctx: Ctx, query: Page & { state?: PayoutState | undefined }) {
    requireRole(ctx, 'admin');
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await payoutQueue(ctx.data, query.state ?? null, timeIdKeyParams(after), query.limit + 1);
    return pageFrom(rows, query.limit, toPayout, (row) => [row.created_key, row.id]);
  }

  /**
   * An admin's decision, made from the state they saw (`expected_state`). The payout row is locked
   * and the state checked under the lock, so of two deciders the second sees the first's move and
   * is refused, even when its own move would be allowed from the new state.
   */
  decide(
    ctx: Ctx,
    input: KeyedInput & {
      payout_id: string;
      state: Decision;
      expected_state: PayoutState;
      note?: string | undefined;
    },
  ) {
    const admin = requireRole(ctx, 'admin');
    const payoutId = idOr(input.payout_id, noSuchPayout);
    return this.deps.writes.runOnce(ctx, adminPayoutDecide, input, async (tx, key) => {
      const at = ctx.now();
      const row = await payoutById(tx, payoutId, true);
      if (!row) throw noSuchPayout();
      if (row.state !== input.expected_state) {
        throw conflictIn(
          `The payout is ${row.state} now, not ${input.expected_state} as it was when decided on; look at it again.`,
          row.state,
        );
      }
      if (!ALLOWED[row.state].includes(input.state)) {
        throw conflictIn(`A payout cannot move from ${row.state} to ${input.state}.`, row.state);
      }
      const amount = Number(row.amount);
      const to = input.state === 'paid' ? PAID_OUT.id : row.available_account_id;
      let entries: Awaited<ReturnType<typeof post>>['entries'] = [];
      if (input.state !== 'approved') {
        await lockAccounts(tx, [row.payout_account_id, to]);
        const movements: Movement[] = [
          { accountId: row.payout_account_id, kind: 'payout', amount: -amount },
          { accountId: to, kind: 'payout', amount },
        ];
        ({ entries } = await post(
          tx,
          { kind: 'payout', payoutId, actorId: admin.id, reason: input.note ?? input.state, at },
          movements,
        ));
      }
      const payout = toPayout(
        await decidePayout(tx, payoutId, {
          state: input.state,
          note: input.note ?? null,
          adminId: admin.id,
          at,
        }),
      );
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: admin.id },
        action: DECISION_ACTIONS[input.state],
        target: { type: 'payout', id: payoutId },
        before: { state: row.state },
        after: { state: input.state, note: input.note ?? null },
      });
      // After the accounts, as a purchase takes the seller's inbox after theirs. A creator whose
      // account is gone is told nothing.
      const { user_id: creatorId } = payout;
      const notes =
        creatorId === null
          ? []
          : await this.deps.notifications.store(
              tx,
              [payoutDecidedNote({ ...payout, user_id: creatorId })],
              at,
            );
      return {
        answer: await key.store(payout),
        afterCommit: async () => {
          await this.deps.bus.publishAllCommitted(
            [...balanceAnnouncements(entries), ...payoutAnnouncement(payout)],
            ctx.log,
          );
          await this.deps.notifications.announce(notes, ctx.log);
        },
      };
    });
  }
}

/** The payout's creator told of its request or its decision (none when their account is gone). */
function payoutAnnouncement(payout: Payout): Announcement[] {
  if (payout.user_id === null) return [];
  return [{ topics: userTopic(payout.user_id), event: { t: 'economy.payout', d: payout } }];
}
