import { describe, expect, it } from 'vitest';
import { SELLER_ACCOUNTS_SQL } from '../../migrations/0029_economy_seller_accounts.js';
import { USER_ACCOUNT_KINDS, userAccountId, userAccountIdSql } from '../../src/modules/economy/accounts.js';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { withMigrator } from '../../src/platform/migrate.js';
import { createEmptyDatabase, insertUser, queryRows } from '../helpers/database.js';
import { useServices } from '../helpers/services.js';
import { buy, fundedUser, listedItem } from './economy.js';

/** A listing makes its seller's accounts; migration 0029 makes them for listings made before that. */

describe('userAccountIdSql', () => {
  const services = useServices();

  it('names the accounts userAccountId names', async () => {
    const s = services();
    const users = [(await s.createUser()).user.id, (await s.createUser()).user.id.toUpperCase()];
    for (const user of users) {
      for (const kind of USER_ACCOUNT_KINDS) {
        const [row] = await queryRows<{ id: string }>(
          s.db,
          `select ${userAccountIdSql('?::uuid', kind)} as id`,
          [user],
        );
        expect(row?.id).toBe(userAccountId(user, kind));
      }
    }
  });
});

describe('migration 0029_economy_seller_accounts', () => {
  it("makes the missing accounts of active listings' sellers, with the ids the service names them by", async () => {
    const { db, drop } = await createEmptyDatabase();
    try {
      await withMigrator(db, (migrator) => migrator.up({ to: '0028_game_server_nodes' }));
      const [bare, half, cancelled] = [await insertUser(db), await insertUser(db), await insertUser(db)];
      for (const [seller, state] of [
        [bare, 'active'],
        [half, 'active'],
        [cancelled, 'cancelled'],
      ] as const) {
        const [item] = await queryRows<{ id: string }>(
          db,
          `insert into catalog_items (id, creator_id, name, asset_type, state, created_at, updated_at)
           values (gen_random_uuid(), ?, 'Hat', 'accessory', 'published', now(), now()) returning id`,
          [seller],
        );
        await queryRows(
          db,
          `insert into marketplace_listings (id, item_id, seller_id, price, state, created_at, updated_at)
           values (gen_random_uuid(), ?, ?, 10, ?::listing_state, now(), now())`,
          [item?.id, seller, state],
        );
      }
      // One account of a seller exists already, with its balance: it stays as it is.
      await queryRows(
        db,
        `insert into economy_accounts (id, user_id, kind, balance, created_at)
         values (?, ?, 'creator_pending', 5, '2026-01-01T00:00:00Z')`,
        [userAccountId(half, 'creator_pending'), half],
      );

      await withMigrator(db, (migrator) => migrator.up());

      const accounts = await queryRows<{ id: string; user_id: string; kind: string; balance: string }>(
        db,
        `select id, user_id, kind::text as kind, balance::text as balance from economy_accounts
         where user_id is not null order by user_id, kind`,
      );
      const expected = [bare, half]
        .flatMap((seller) =>
          (['creator_pending', 'creator_available'] as const).map((kind) => ({
            id: userAccountId(seller, kind),
            user_id: seller,
            kind,
            balance: seller === half && kind === 'creator_pending' ? '5' : '0',
          })),
        )
        .sort((a, b) => (a.user_id + a.kind < b.user_id + b.kind ? -1 : 1));
      expect(accounts).toEqual(expected);
    } finally {
      await drop();
    }
  });
});

describe("a listing whose seller's accounts are missing", () => {
  const services = useServices();

  it('sells once migration 0029 made them', async () => {
    const s = services();
    const admin = await s.createUser();
    const seller = await s.createUser();
    const buyer = await fundedUser(s, admin, 100);
    const { listing } = await listedItem(s, seller, { price: 10 });
    // As a listing made before listings made their seller's accounts.
    await queryRows(s.db, 'delete from economy_accounts where user_id = ?', [seller.user.id]);
    await queryRows(s.db, SELLER_ACCOUNTS_SQL);
    await buy(s, buyer, listing.id);
    const balance = await s.call('economy.creator.balance', s.ctxFor(seller.user), undefined);
    expect(balance.pending).toBe(7);
    expect(await verifyLedger(s.db.data)).toEqual([]);
  });
});
