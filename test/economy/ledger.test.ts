import { describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, fundedUser, grant, key, ledgerCounts } from './economy.js';

describe('wallets, grants and the ledger', () => {
  const services = useServices();

  it('shows a wallet that never moved as balance 0 with no updated_at', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    expect(await call('economy.wallet', ctxFor(user), undefined)).toEqual({
      user_id: user.id,
      currency: 'coin',
      balance: 0,
      updated_at: null,
    });
  });

  it('credits a grant to the wallet from the issuance account, in one transaction summing to zero', async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await s.createUser();
    const granted = await grant(s, admin, user.user.id, 500);
    expect(granted).toMatchObject({ user_id: user.user.id, amount: 500, currency: 'coin', balance: 500 });
    const wallet = await s.call('economy.wallet', s.ctxFor(user.user), undefined);
    expect(wallet.balance).toBe(500);
    expect(wallet.updated_at).not.toBeNull();
    const tx = await s.call('economy.transaction', s.ctxFor(user.user), {
      transaction_id: granted.transaction_id,
    });
    expect(tx.kind).toBe('grant');
    expect(tx.entries.map((e) => [e.account, e.kind, e.amount])).toEqual(
      expect.arrayContaining([
        ['platform_issuance', 'grant', -500],
        ['wallet', 'grant', 500],
      ]),
    );
    expect(tx.entries.reduce((sum, e) => sum + e.amount, 0)).toBe(0);
    const page = await s.call('economy.ledger', s.ctxFor(user.user), {});
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({
      account: 'wallet',
      user_id: user.user.id,
      amount: 500,
      balance_after: 500,
    });
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });

  it('refuses a grant by a non-admin with FORBIDDEN and writes nothing', async () => {
    const s = services();
    const moderator = await s.createUser();
    const before = await ledgerCounts(s);
    await expect(
      s.call('economy.admin.grant', s.ctxFor({ ...moderator.user, roles: ['user', 'moderator'] }), {
        idempotency_key: key(),
        user_id: moderator.user.id,
        amount: 10,
        reason: 'self',
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await ledgerCounts(s)).toEqual(before);
  });

  it('answers a grant to an unknown user with NOT_FOUND and writes nothing', async () => {
    const s = services();
    const admin = await s.createUser();
    const before = await ledgerCounts(s);
    await expect(grant(s, admin, '01a1ffb2-0000-7000-8000-000000000000', 10)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await ledgerCounts(s)).toEqual(before);
  });

  it('hides a transaction from users who own none of its accounts, and shows it to admins', async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await fundedUser(s, admin, 100);
    const other = await s.createUser();
    const [entry] = (await s.call('economy.ledger', s.ctxFor(user.user), {})).items;
    const id = entry?.transaction_id as string;
    await expect(
      s.call('economy.transaction', s.ctxFor(other.user), { transaction_id: id }),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const seen = await s.call('economy.transaction', s.ctxFor(asAdmin(other.user)), { transaction_id: id });
    expect(seen.id).toBe(id);
  });

  it('keeps entries and transactions append-only: the database refuses UPDATE and DELETE', async () => {
    const s = services();
    const admin = await s.createUser();
    await fundedUser(s, admin, 100);
    const data = s.db.data;
    for (const sql of [
      'update economy_entries set amount = amount + 1',
      'delete from economy_entries',
      'update economy_transactions set reason = null',
      'delete from economy_transactions',
      'truncate economy_entries cascade',
    ]) {
      await expect(executeBound(data, sql, []), sql).rejects.toThrow(/append-only/);
    }
    expect(await verifyLedger(data)).toEqual([]);
  });

  it('refuses in the database a user balance below zero and a transaction that does not sum to zero', async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await fundedUser(s, admin, 100);
    const data = s.db.data;
    await expect(
      executeBound(data, `update economy_accounts set balance = -1 where user_id = $1 and kind = 'wallet'`, [
        user.user.id,
      ]),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      transaction(data, async (tx) => {
        const [account] = await executeBound<{ id: string }>(
          tx,
          `select id from economy_accounts where user_id = $1 and kind = 'wallet'`,
          [user.user.id],
        );
        await executeBound(
          tx,
          `insert into economy_transactions (id, kind, created_at) values ($1, 'adjustment', now())`,
          ['01a1ffb2-0000-7000-8000-0000000000aa'],
        );
        await executeBound(
          tx,
          `insert into economy_entries (id, transaction_id, account_id, kind, amount, balance_after, created_at)
           values ($1, $2, $3, 'adjustment', 5, 105, now())`,
          ['01a1ffb2-0000-7000-8000-0000000000ab', '01a1ffb2-0000-7000-8000-0000000000aa', account?.id],
        );
      }),
    ).rejects.toThrow(/does not sum to zero/);
    expect(await verifyLedger(data)).toEqual([]);
  });

  it('makes verify report a stored balance that is not the sum of its entries', async () => {
    const s = services();
    const admin = await s.createUser();
    const user = await fundedUser(s, admin, 100);
    const data = s.db.data;
    await executeBound(
      data,
      `update economy_accounts set balance = 90 where user_id = $1 and kind = 'wallet'`,
      [user.user.id],
    );
    expect(await verifyLedger(data)).toEqual([
      expect.objectContaining({
        kind: 'balance',
        account: 'wallet',
        user_id: user.user.id,
        stored: 90,
        entries: 100,
      }),
    ]);
    await executeBound(
      data,
      `update economy_accounts set balance = 100 where user_id = $1 and kind = 'wallet'`,
      [user.user.id],
    );
    expect(await verifyLedger(data)).toEqual([]);
  });
});
