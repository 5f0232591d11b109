import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { verifyLedger } from '../../src/modules/economy/index.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets } from '../helpers/ws-client.js';
import { sent } from './rest.js';

/**
 * Several nodes on one database: each runs the release job, and a user's economy events reach
 * their socket on whichever node it is connected to.
 */
describe('the economy on several nodes', () => {
  let cluster: TestCluster;
  const node = (i: number) => cluster.nodes[i] as TestCluster['nodes'][number];
  const { open, closeAll } = openedSockets(() => node(1).wsUrl);

  beforeAll(async () => {
    // Holds end at once; the job's own timer never fires during the test.
    cluster = await buildTestCluster(2, {
      ECONOMY_HOLD_SECONDS: 0,
      ECONOMY_RELEASE_INTERVAL_SECONDS: 86_400,
      // One buyer makes 30 purchases; the per-user purchase rate is tested in purchase-rate.test.ts.
      ECONOMY_PURCHASE_RATE_LIMIT_COUNT: 1_000,
    });
  });
  afterAll(async () => {
    closeAll();
    await cluster?.close();
  });

  const send = (user: TokenResponse, method: 'POST' | 'PATCH', url: string, payload: object) =>
    sent(node(0), user, method, url, payload);

  it('releases every due hold exactly once when all nodes run the job at once, and tells the creator on another node', async () => {
    const admin = await registerWithRole(node(0), 'admin');
    const [creator, buyer] = [await registerUser(node(0)), await registerUser(node(0))];
    await send(admin, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.user.id,
      amount: 10_000,
      reason: 'r',
    });
    const item = await send(creator, 'POST', '/api/economy/items', {
      name: 'Gem',
      asset_type: 'model',
      consumable: true,
    });
    await send(creator, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await send(creator, 'POST', '/api/economy/listings', { item_id: item.id, price: 100 });
    for (let i = 0; i < 30; i++)
      await send(buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
    const socket = await open(creator.access_token);

    await Promise.all([0, 1, 0, 1].map((i) => node(i).modules.economy.releaseDue()));

    const balance = await node(1).http.inject({
      method: 'GET',
      url: '/api/economy/creator/balance',
      headers: bearer(creator.access_token),
    });
    expect(balance.json()).toMatchObject({ pending: 0, available: 2100, next_release_at: null });
    // One event per release, from whichever node released it.
    const releases = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const event = await socket.next(
        (f) => f.t === 'economy.balance' && (f.d as { account: string }).account === 'creator_available',
      );
      releases.add((event.d as { transaction_id: string }).transaction_id);
    }
    expect(releases.size).toBe(30);
    const rows = await queryRows<{ n: number }>(
      node(0).db,
      `select count(*)::int as n from economy_transactions where kind = 'release'`,
    );
    expect(rows[0]?.n).toBe(30);

    const payout = await send(creator, 'POST', '/api/economy/payouts', { amount: 2000 });
    const told = await socket.next((f) => f.t === 'economy.payout');
    expect(told.d).toMatchObject({ id: payout.id, state: 'requested', amount: 2000 });
    expect(await verifyLedger(node(0).db.data)).toEqual([]);
  });
});
