import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Listing, Payout, Purchase } from '../../protocol/economy.js';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { executeBound } from '../../src/platform/db.js';
import type { ServiceUser } from '../helpers/services.js';
import { useServices } from '../helpers/services.js';
import { asAdmin, balanceOf, buy, grant, key, listedItem } from './economy.js';

/**
 * The ledger's invariants over random sequences of grants, purchases, refunds, hold endings and
 * releases, payout requests and decisions: after every sequence each transaction sums to zero,
 * every balance is the sum of its entries, no user account is below zero (verify is clean), and
 * each wallet holds exactly what the accepted grants, purchases and refunds left in it.
 */

type Command =
  | { t: 'grant'; user: number; amount: number }
  | { t: 'buy'; user: number; listing: number }
  | { t: 'refund'; purchase: number }
  | { t: 'endHold'; purchase: number }
  | { t: 'payout'; creator: number; amount: number }
  | { t: 'decide'; payout: number; state: 'approved' | 'paid' | 'rejected' };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ t: fc.constant('grant'), user: fc.nat(2), amount: fc.integer({ min: 1, max: 5000 }) }),
  { weight: 3, arbitrary: fc.record({ t: fc.constant('buy'), user: fc.nat(2), listing: fc.nat(3) }) },
  fc.record({ t: fc.constant('refund'), purchase: fc.nat(20) }),
  { weight: 2, arbitrary: fc.record({ t: fc.constant('endHold'), purchase: fc.nat(20) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('payout'),
      creator: fc.nat(1),
      amount: fc.integer({ min: 50, max: 1500 }),
    }),
  },
  fc.record({
    t: fc.constant('decide'),
    payout: fc.nat(5),
    state: fc.constantFrom('approved' as const, 'paid' as const, 'rejected' as const),
  }),
) as fc.Arbitrary<Command>;

/** The refusals a command may meet; anything else fails the property. */
const EXPECTED = new Set(['INSUFFICIENT_FUNDS', 'ALREADY_OWNED', 'CONFLICT', 'VALIDATION_FAILED']);

describe('ledger invariants (property)', () => {
  const services = useServices({
    ECONOMY_PAYOUT_MINIMUM: 100,
    ECONOMY_CREATE_RATE_LIMIT_COUNT: 100_000,
    ECONOMY_PURCHASE_RATE_LIMIT_COUNT: 100_000,
  });
  let admin: ServiceUser;
  let buyers: ServiceUser[];
  let creators: ServiceUser[];
  let listings: Listing[];

  beforeAll(async () => {
    const s = services();
    admin = await s.createUser();
    buyers = [await s.createUser(), await s.createUser(), await s.createUser()];
    creators = [await s.createUser(), await s.createUser()];
    listings = [
      (await listedItem(s, creators[0] as ServiceUser, { price: 700, consumable: true })).listing,
      (await listedItem(s, creators[0] as ServiceUser, { price: 1500 })).listing,
      (await listedItem(s, creators[1] as ServiceUser, { price: 999, consumable: true, quantity: 4 }))
        .listing,
      (await listedItem(s, creators[1] as ServiceUser, { price: 1, consumable: true })).listing,
    ];
  });

  it('keeps every transaction balanced, every balance its entries, none negative, and wallets as the model says', async () => {
    const s = services();
    const done = new Map<Command['t'], number>();
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 20, maxLength: 40 }), async (commands) => {
        const wallets = await Promise.all(buyers.map((b) => balanceOf(s, b)));
        const purchases: Purchase[] = [];
        const payouts: Payout[] = [];
        const adminCtx = s.ctxFor(asAdmin(admin.user));
        for (const c of commands) {
          try {
            switch (c.t) {
              case 'grant':
                await grant(s, admin, (buyers[c.user] as ServiceUser).user.id, c.amount);
                wallets[c.user] = (wallets[c.user] as number) + c.amount;
                break;
              case 'buy': {
                const listing = listings[c.listing] as Listing;
                const before = wallets[c.user] as number;
                try {
                  purchases.push(await buy(s, buyers[c.user] as ServiceUser, listing.id));
                  wallets[c.user] = before - listing.price;
                } catch (error) {
                  if ((error as { code?: string }).code === 'INSUFFICIENT_FUNDS')
                    expect(before).toBeLessThan(listing.price);
                  throw error;
                }
                break;
              }
              case 'refund': {
                const purchase = purchases[c.purchase % Math.max(1, purchases.length)];
                if (!purchase) break;
                await s.call('economy.admin.refund', adminCtx, {
                  idempotency_key: key(),
                  purchase_id: purchase.id,
                  reason: 'property',
                });
                const buyer = buyers.findIndex((b) => b.user.id === purchase.buyer_id);
                wallets[buyer] = (wallets[buyer] as number) + purchase.price;
                break;
              }
              case 'endHold': {
                const purchase = purchases[c.purchase % Math.max(1, purchases.length)];
                if (!purchase) break;
                await executeBound(
                  s.db.data,
                  `update purchases set hold_until = now() - interval '1 second' where id = $1`,
                  [purchase.id],
                );
                await s.apis.economy.releaseDue();
                break;
              }
              case 'payout':
                payouts.push(
                  await s.call(
                    'economy.payouts.create',
                    s.ctxFor((creators[c.creator] as ServiceUser).user),
                    {
                      idempotency_key: key(),
                      amount: c.amount,
                    },
                  ),
                );
                break;
              case 'decide': {
                const payout = payouts[c.payout % Math.max(1, payouts.length)];
                if (!payout) break;
                // Decided from the state the admin reads first, as the console does.
                const seen = await s.call('economy.payouts.get', adminCtx, { payout_id: payout.id });
                await s.call('economy.admin.payouts.decide', adminCtx, {
                  idempotency_key: key(),
                  payout_id: payout.id,
                  state: c.state,
                  expected_state: seen.state,
                });
                break;
              }
            }
            done.set(c.t, (done.get(c.t) ?? 0) + 1);
          } catch (error) {
            if (!EXPECTED.has((error as { code?: string }).code ?? '')) throw error;
          }
        }
        expect(await verifyLedger(s.db.data)).toEqual([]);
        const [negative] = await executeBound<{ n: string }>(
          s.db.data,
          `select count(*)::text as n from economy_accounts where kind <> 'platform_issuance' and balance < 0`,
          [],
        );
        expect(negative?.n).toBe('0');
        expect(await Promise.all(buyers.map((b) => balanceOf(s, b)))).toEqual(wallets);
      }),
      { numRuns: 20, seed: 20261127 },
    );
    // The sequences moved money every way, not only met refusals.
    expect([...done.keys()].sort()).toEqual(['buy', 'decide', 'endHold', 'grant', 'payout', 'refund']);
  }, 240_000);
});
