import { describe, expect, it } from 'vitest';
import type { PayoutState } from '../../protocol/economy.js';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { ReleaseJob } from '../../src/modules/economy/release.js';
import { EventBus } from '../../src/platform/bus.js';
import { executeBound } from '../../src/platform/db.js';
import { createLogger } from '../../src/platform/log.js';
import { auditEntriesOf } from '../audit/audit.js';
import type { Services, ServiceUser } from '../helpers/services.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, buy, earningCreator, fundedUser, key, ledgerCounts, listedItem } from './economy.js';

const request = (s: Services, user: ServiceUser, amount: number) =>
  s.call('economy.payouts.create', s.ctxFor(user.user), { idempotency_key: key(), amount });
type Decision = 'approved' | 'paid' | 'rejected';
/** The state each decision is made from when a test does not say: the one it is allowed from. */
const FROM: Record<Decision, PayoutState> = {
  approved: 'requested',
  paid: 'approved',
  rejected: 'requested',
};
const decide = (
  s: Services,
  admin: ServiceUser,
  payoutId: string,
  state: Decision,
  expectedState: PayoutState = FROM[state],
) =>
  s.call('economy.admin.payouts.decide', s.ctxFor(asAdmin(admin.user)), {
    idempotency_key: key(),
    payout_id: payoutId,
    state,
    expected_state: expectedState,
  });
const stateOf = async (s: Services, admin: ServiceUser, payoutId: string) =>
  (await s.call('economy.payouts.get', s.ctxFor(asAdmin(admin.user)), { payout_id: payoutId })).state;

describe('payouts', () => {
  const services = useServices();

  it('releases the due holds first, then moves the amount from available to in payout', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 3);
    const payout = await request(s, creator, 1500);
    expect(payout).toMatchObject({
      user_id: creator.user.id,
      amount: 1500,
      state: 'requested',
      decided_by: null,
    });
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ pending: 0, available: 600, in_payout: 1500, paid_out: 0 });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refuses an amount below the minimum with 422 naming body.amount and the minimum, and one over available with INSUFFICIENT_FUNDS', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const before = await ledgerCounts(s);
    await expect(request(s, creator, 999)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      extra: { errors: [{ path: 'body.amount' }], details: { minimum: 1000 } },
    });
    await expect(request(s, creator, 1401)).rejects.toMatchObject({
      code: 'INSUFFICIENT_FUNDS',
      extra: { details: { balance: 1400, required: 1401 } },
    });
    expect(await ledgerCounts(s)).toEqual(before);
  });

  it('pays an approved payout into platform_payouts and counts it as paid out', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const payout = await request(s, creator, 1000);
    expect(await decide(s, admin, payout.id, 'approved')).toMatchObject({
      state: 'approved',
      decided_by: admin.user.id,
    });
    expect(await decide(s, admin, payout.id, 'paid')).toMatchObject({ state: 'paid' });
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ available: 400, in_payout: 0, paid_out: 1000 });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('gives a rejected payout back to available', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const payout = await request(s, creator, 1000);
    await decide(s, admin, payout.id, 'approved');
    expect(await decide(s, admin, payout.id, 'rejected', 'approved')).toMatchObject({ state: 'rejected' });
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ available: 1400, in_payout: 0, paid_out: 0 });
  });

  const illegal: [PayoutState[], Decision][] = [
    [[], 'paid'],
    [['approved'], 'approved'],
    [['approved', 'paid'], 'approved'],
    [['approved', 'paid'], 'paid'],
    [['approved', 'paid'], 'rejected'],
    [['rejected'], 'approved'],
    [['rejected'], 'paid'],
    [['rejected'], 'rejected'],
  ];
  it.each(illegal)(
    'refuses the move after %j to %s with CONFLICT and current_state, moving nothing',
    async (path, move) => {
      const s = services();
      const admin = await s.createUser();
      const creator = await earningCreator(s, admin, 2);
      const payout = await request(s, creator, 1000);
      for (const step of path) await decide(s, admin, payout.id, step as Decision);
      const current = path.at(-1) ?? 'requested';
      const before = await ledgerCounts(s);
      await expect(decide(s, admin, payout.id, move, current)).rejects.toMatchObject({
        code: 'CONFLICT',
        extra: { details: { current_state: current } },
      });
      expect(await ledgerCounts(s)).toEqual(before);
    },
  );

  it('lets one of two admins deciding the same payout at once win', async () => {
    const s = services();
    const [first, second] = [await s.createUser(), await s.createUser()];
    const creator = await earningCreator(s, first, 2);
    const payout = await request(s, creator, 1000);
    const results = await Promise.allSettled([
      decide(s, first, payout.id, 'rejected'),
      decide(s, second, payout.id, 'rejected'),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: 'CONFLICT' } });
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ available: 1400, in_payout: 0 });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refuses a decision made from a state the payout left with CONFLICT and current_state, writing nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const payout = await request(s, creator, 1000);
    await decide(s, admin, payout.id, 'approved');
    const [before, audited] = [await ledgerCounts(s), await auditEntriesOf(s.db, payout.id)];
    // Allowed from approved, but decided from the requested payout the admin saw.
    await expect(decide(s, admin, payout.id, 'rejected', 'requested')).rejects.toMatchObject({
      code: 'CONFLICT',
      extra: { details: { current_state: 'approved' } },
    });
    expect(await ledgerCounts(s)).toEqual(before);
    expect(await auditEntriesOf(s.db, payout.id)).toEqual(audited);
    expect(await stateOf(s, admin, payout.id)).toBe('approved');
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ available: 400, in_payout: 1000 });
  });

  it('lets exactly one of two concurrent decisions from requested win, approve against reject; the other gets CONFLICT', async () => {
    const s = services();
    const [first, second] = [await s.createUser(), await s.createUser()];
    const creator = await earningCreator(s, first, 2);
    const payout = await request(s, creator, 1000);
    const results = await Promise.allSettled([
      decide(s, first, payout.id, 'approved', 'requested'),
      decide(s, second, payout.id, 'rejected', 'requested'),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected');
    const winner = (won[0] as PromiseFulfilledResult<{ state: PayoutState }>).value.state;
    expect(lost).toMatchObject({
      reason: { code: 'CONFLICT', extra: { details: { current_state: winner } } },
    });
    expect(await stateOf(s, first, payout.id)).toBe(winner);
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject(
      winner === 'approved' ? { available: 400, in_payout: 1000 } : { available: 1400, in_payout: 0 },
    );
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it("keeps a deleted creator's open payout for an admin to decide, paid from the tombstone account", async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const payout = await request(s, creator, 1000);
    await s.call('users.deleteMe', s.ctxFor(creator.user), { password: creator.password });
    await decide(s, admin, payout.id, 'approved');
    expect(await decide(s, admin, payout.id, 'paid')).toMatchObject({
      user_id: null,
      state: 'paid',
      amount: 1000,
    });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('shows payouts to their creator and admins, and queues them oldest first for admins only', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 3);
    const stranger = await s.createUser();
    const a = await request(s, creator, 1000);
    const b = await request(s, creator, 1000);
    expect((await s.call('economy.payouts.list', s.ctxFor(creator.user), {})).items.map((p) => p.id)).toEqual(
      [b.id, a.id],
    );
    await expect(
      s.call('economy.payouts.get', s.ctxFor(stranger.user), { payout_id: a.id }),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(
      (await s.call('economy.payouts.get', s.ctxFor(asAdmin(stranger.user)), { payout_id: a.id })).id,
    ).toBe(a.id);
    const queue = await s.call('economy.admin.payouts', s.ctxFor(asAdmin(admin.user)), {
      state: 'requested',
    });
    const ours = queue.items.map((p) => p.id).filter((id) => id === a.id || id === b.id);
    expect(ours).toEqual([a.id, b.id]);
    await expect(s.call('economy.admin.payouts', s.ctxFor(creator.user), {})).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
  });
});

describe('the hold release job', () => {
  const services = useServices({ ECONOMY_HOLD_SECONDS: 0 });

  it('releases each due hold exactly once, however many passes run at once', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await s.createUser();
    const buyer = await fundedUser(s, admin, 10_000);
    const { listing } = await listedItem(s, creator, { price: 100, consumable: true });
    for (let i = 0; i < 12; i++) await buy(s, buyer, listing.id);
    // Each pass joins one already running on this node; a second services instance is another node.
    await Promise.all([s.apis.economy.releaseDue(), s.apis.economy.releaseDue()]);
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ pending: 0, available: 840, next_release_at: null });
    const releases = await executeBound<{ n: string }>(
      s.db.data,
      `select count(*)::text as n from economy_transactions t join purchases p on p.id = t.purchase_id
       where t.kind = 'release' and p.seller_id = $1`,
      [creator.user.id],
    );
    expect(releases[0]?.n).toBe('12');
    await s.apis.economy.releaseDue();
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});

describe('the release job after downtime', () => {
  const services = useServices({ ECONOMY_HOLD_SECONDS: 0 });

  it('releases every hold that came due while no node ran, in as many batches as it takes, in one pass', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await s.createUser();
    const buyer = await fundedUser(s, admin, 10_000);
    const { listing } = await listedItem(s, creator, { price: 100, consumable: true });
    for (let i = 0; i < 7; i++) await buy(s, buyer, listing.id);
    // A job of its own with batches of 3: the pass must not stop after the first.
    const job = new ReleaseJob({
      db: s.db,
      bus: new EventBus(s.kv, { maxLen: 10, ttlMs: 60_000 }),
      log: createLogger({ LOG_LEVEL: 'silent' }),
      intervalSeconds: 86_400,
      idempotencyTtlHours: 24,
      batch: 3,
    });
    await job.runOnce();
    const balance = await s.call('economy.creator.balance', s.ctxFor(creator.user), undefined);
    expect(balance).toMatchObject({ pending: 0, available: 490, next_release_at: null });
  });
});
