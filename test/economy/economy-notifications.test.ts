import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Notification } from '../../protocol/notifications.js';
import { bearer, callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';
import { openedSockets } from '../helpers/ws-client.js';
import { sent } from './rest.js';

/**
 * What the economy notifies (docs/notifications.md: economy.item_sold, economy.payout_decided)
 * and the payout request's domain event, written with their cause. The events are read from the
 * outbox's table (test/helpers/domain-events.ts): a module consumes the type, and the app's outbox
 * is stopped, so what was recorded stays there.
 */

const PAYOUT_REQUESTED = 'economy.payout.requested';

describe('economy notifications', () => {
  const app = useTestApp({}, { modules: [...testModules, consumerOf(PAYOUT_REQUESTED)] });
  const { expectStatus } = callsAs(app);
  const sockets = openedSockets(() => app().wsUrl);
  const { recordedBy } = recordedEvents(app);
  let admin: TokenResponse;

  beforeAll(async () => {
    await app().outbox.stop();
    admin = await registerWithRole(app(), 'admin');
  });

  const inbox = async (user: TokenResponse) =>
    (await expectStatus(200, 'GET', '/api/notifications', user)).json().items as Notification[];
  /** Every stored notification of `code` whose content names `field` = `id`, with its recipient. */
  const notificationsAbout = (code: string, field: string, id: string) =>
    queryRows<{ user_id: string; sender_id: string | null }>(
      app().db,
      'select user_id, sender_id from notifications where code = ? and content->>? = ?',
      [code, field, id],
    );
  /** A write under /api/economy with its own Idempotency-Key, whatever it answers. */
  const economyCall = (
    user: TokenResponse,
    method: 'POST' | 'PATCH',
    url: string,
    payload: object,
    key = randomUUID(),
  ) =>
    app().http.inject({
      method,
      url,
      headers: { ...bearer(user.access_token), 'idempotency-key': key },
      payload,
    });

  /** A seller's published item listed at `price`, and a buyer granted `funds`. */
  const market = async (price: number, funds: number) => {
    const [seller, buyer] = [await registerUser(app()), await registerUser(app())];
    await sent(app(), admin, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.user.id,
      amount: funds,
      reason: 'test grant',
    });
    const item = await sent(app(), seller, 'POST', '/api/economy/items', {
      name: 'Lantern',
      asset_type: 'accessory',
    });
    await sent(app(), seller, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await sent(app(), seller, 'POST', '/api/economy/listings', { item_id: item.id, price });
    return { seller, buyer, item, listing };
  };

  /** A creator with 1400 available: a sale of 2000 whose hold ended. */
  const earningCreator = async () => {
    const { seller, buyer, listing } = await market(2000, 2000);
    const purchase = await sent(app(), buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
    await queryRows(app().db, `update purchases set hold_until = now() - interval '1 second' where id = ?`, [
      purchase.id,
    ]);
    return seller;
  };

  describe('economy.item_sold', () => {
    it('tells the seller alone of each purchase, from nobody, with the sale in the content, live on their socket after the sale and balance events', async () => {
      const { seller, buyer, item, listing } = await market(100, 500);
      const socket = await sockets.open(seller.access_token);
      const purchase = await sent(app(), buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
      const notes = await inbox(seller);
      expect(notes).toHaveLength(1);
      const [note] = notes;
      expect(note).toMatchObject({
        code: 'economy.item_sold',
        subject: expect.stringContaining('Lantern'),
        sender_id: null,
        read_at: null,
        content: {
          purchase_id: purchase.id,
          listing_id: listing.id,
          item: { id: item.id, name: 'Lantern' },
          price: 100,
          seller_amount: 70,
          currency: 'coin',
        },
      });
      expect(await notificationsAbout('economy.item_sold', 'purchase_id', purchase.id)).toEqual([
        { user_id: seller.user.id, sender_id: null },
      ]);
      expect(await inbox(buyer)).toEqual([]);
      const live = await socket.next((frame) => frame.t === 'notification', 5_000);
      expect(live).toMatchObject({ d: note, pos: expect.anything() });
      // The sale and the balances are published before it, in the same pipeline: already here.
      expect(await socket.next((frame) => frame.t === 'economy.sale', 0)).toMatchObject({
        d: { id: purchase.id },
      });
      expect(await socket.next((frame) => frame.t === 'economy.balance', 0)).toBeDefined();
      sockets.closeAll();
    });

    it('notifies once per purchase, and not again for a replayed one', async () => {
      const { seller, buyer, listing } = await market(100, 500);
      const key = randomUUID();
      const first = await economyCall(
        buyer,
        'POST',
        '/api/economy/purchases',
        { listing_id: listing.id },
        key,
      );
      expect(first.statusCode).toBe(201);
      const replay = await economyCall(
        buyer,
        'POST',
        '/api/economy/purchases',
        { listing_id: listing.id },
        key,
      );
      expect(replay.headers['idempotent-replayed']).toBe('true');
      const notes = await inbox(seller);
      expect(notes.map((note) => note.content.purchase_id)).toEqual([first.json().id]);
    });

    it('notifies nobody of a refused purchase', async () => {
      const { seller, buyer, listing } = await market(100, 50);
      const short = await economyCall(buyer, 'POST', '/api/economy/purchases', { listing_id: listing.id });
      expect(short.json()).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
      const own = await economyCall(seller, 'POST', '/api/economy/purchases', { listing_id: listing.id });
      expect(own.statusCode).toBe(422);
      expect(await inbox(seller)).toEqual([]);
      expect(await inbox(buyer)).toEqual([]);
    });
  });

  describe('economy.payout_decided', () => {
    const decide = (payoutId: string, state: string, expectedState: string, note?: string) =>
      economyCall(admin, 'PATCH', `/api/economy/admin/payouts/${payoutId}`, {
        state,
        expected_state: expectedState,
        ...(note === undefined ? {} : { note }),
      });
    const payoutNotes = async (creator: TokenResponse) =>
      (await inbox(creator)).filter((note) => note.code === 'economy.payout_decided');

    it('tells the creator of each decision, from nobody, with the payout’s state and note', async () => {
      const creator = await earningCreator();
      const payout = await sent(app(), creator, 'POST', '/api/economy/payouts', { amount: 1000 });
      expect((await decide(payout.id, 'approved', 'requested', 'checked')).statusCode).toBe(200);
      expect((await decide(payout.id, 'paid', 'approved')).statusCode).toBe(200);
      const [paid, approved] = await payoutNotes(creator);
      expect(approved).toMatchObject({
        sender_id: null,
        content: { payout_id: payout.id, state: 'approved', amount: 1000, currency: 'coin', note: 'checked' },
      });
      expect(paid).toMatchObject({
        sender_id: null,
        content: { payout_id: payout.id, state: 'paid', amount: 1000, currency: 'coin', note: 'checked' },
      });
      expect(
        (await notificationsAbout('economy.payout_decided', 'payout_id', payout.id)).map(
          (row) => row.user_id,
        ),
      ).toEqual([creator.user.id, creator.user.id]);
      expect(await payoutNotes(admin)).toEqual([]);
    });

    it('tells the creator of a rejection', async () => {
      const creator = await earningCreator();
      const payout = await sent(app(), creator, 'POST', '/api/economy/payouts', { amount: 1000 });
      expect((await decide(payout.id, 'rejected', 'requested', 'no bank details')).statusCode).toBe(200);
      expect(await payoutNotes(creator)).toEqual([
        expect.objectContaining({
          sender_id: null,
          content: {
            payout_id: payout.id,
            state: 'rejected',
            amount: 1000,
            currency: 'coin',
            note: 'no bank details',
          },
        }),
      ]);
    });

    it('notifies nobody of a refused decision', async () => {
      const creator = await earningCreator();
      const payout = await sent(app(), creator, 'POST', '/api/economy/payouts', { amount: 1000 });
      const stale = await decide(payout.id, 'paid', 'approved');
      expect(stale.statusCode).toBe(409);
      const notAllowed = await decide(payout.id, 'paid', 'requested');
      expect(notAllowed.statusCode).toBe(409);
      const byUser = await economyCall(creator, 'PATCH', `/api/economy/admin/payouts/${payout.id}`, {
        state: 'approved',
        expected_state: 'requested',
      });
      expect(byUser.statusCode).toBe(403);
      expect(await payoutNotes(creator)).toEqual([]);
    });
  });

  describe('economy.payout.requested', () => {
    it('is recorded with the payout as the 201 answers it, and not for its replay', async () => {
      const creator = await earningCreator();
      const key = randomUUID();
      let answer: unknown;
      const events = await recordedBy(PAYOUT_REQUESTED, async () => {
        const created = await economyCall(creator, 'POST', '/api/economy/payouts', { amount: 1000 }, key);
        expect(created.statusCode).toBe(201);
        answer = created.json();
      });
      expect(events).toEqual([{ payout: answer }]);
      const replay = await recordedBy(PAYOUT_REQUESTED, async () => {
        const again = await economyCall(creator, 'POST', '/api/economy/payouts', { amount: 1000 }, key);
        expect(again.headers['idempotent-replayed']).toBe('true');
      });
      expect(replay).toEqual([]);
    });

    it('is not recorded for a refused request', async () => {
      const creator = await earningCreator();
      const events = await recordedBy(PAYOUT_REQUESTED, async () => {
        const tooMuch = await economyCall(creator, 'POST', '/api/economy/payouts', { amount: 1401 });
        expect(tooMuch.json()).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
        const tooLittle = await economyCall(creator, 'POST', '/api/economy/payouts', { amount: 999 });
        expect(tooLittle.statusCode).toBe(422);
      });
      expect(events).toEqual([]);
    });
  });
});
