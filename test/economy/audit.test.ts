import { describe, expect, it } from 'vitest';
import { auditEntriesOf } from '../audit/audit.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, buy, earningCreator, fundedUser, key, listedItem } from './economy.js';

/** The economy's admin actions in the audit log, each written in the action's transaction. */
describe("the economy's admin actions in the audit log", () => {
  const services = useServices();

  it('records a grant once, even when its Idempotency-Key is sent again', async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await s.createUser();
    const input = { idempotency_key: key(), user_id: user.user.id, amount: 250, reason: 'welcome' };
    const granted = await s.call('economy.admin.grant', s.ctxFor(asAdmin(admin.user)), input);
    await s.call('economy.admin.grant', s.ctxFor(asAdmin(admin.user)), input);
    expect(await auditEntriesOf(s.db, user.user.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'economy.grant',
        target_type: 'user',
        target_id: user.user.id,
        before: null,
        after: { transaction_id: granted.transaction_id, amount: 250, reason: 'welcome' },
      },
    ]);
  });

  it('records each payout decision with the states before and after, and nothing for a refused move', async () => {
    const s = services();
    const admin = await s.createUser();
    const creator = await earningCreator(s, admin, 2);
    const payout = await s.call('economy.payouts.create', s.ctxFor(creator.user), {
      idempotency_key: key(),
      amount: 1000,
    });
    const decide = (state: 'approved' | 'paid' | 'rejected', from: 'requested' | 'approved' | 'paid') =>
      s.call('economy.admin.payouts.decide', s.ctxFor(asAdmin(admin.user)), {
        idempotency_key: key(),
        payout_id: payout.id,
        state,
        expected_state: from,
      });
    await decide('approved', 'requested');
    await decide('paid', 'approved');
    await expect(decide('rejected', 'paid')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(decide('rejected', 'approved')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(
      (await auditEntriesOf(s.db, payout.id)).map((e) => [e.action, e.actor_id, e.before, e.after]),
    ).toEqual([
      ['economy.payouts.approve', admin.user.id, { state: 'requested' }, { state: 'approved', note: null }],
      ['economy.payouts.pay', admin.user.id, { state: 'approved' }, { state: 'paid', note: null }],
    ]);
  });

  it('records a refund with its reason, and nothing for a second refund refused with 409', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 1000);
    const { listing } = await listedItem(s, seller, { price: 200 });
    const purchase = await buy(s, buyer, listing.id);
    const refund = (reason: string) =>
      s.call('economy.admin.refund', s.ctxFor(asAdmin(admin.user)), {
        idempotency_key: key(),
        purchase_id: purchase.id,
        reason,
      });
    const refunded = await refund('chargeback');
    await expect(refund('again')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await auditEntriesOf(s.db, purchase.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'economy.purchases.refund',
        target_type: 'purchase',
        target_id: purchase.id,
        before: { state: 'completed' },
        after: { state: 'refunded', transaction_id: refunded.refund_transaction_id, reason: 'chargeback' },
      },
    ]);
  });
});
