import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { domainEventTypes } from '../../protocol/domain-events.js';
import { statementsAtOnce } from '../../src/platform/batcher.js';
import { executeBound } from '../../src/platform/db.js';
import { bearer, callsAs, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { statementBatches, testModules, useTestApp, whileTransactionOpen } from '../helpers/app.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';
import { openedSockets, request } from '../helpers/ws-client.js';

/**
 * The domain events the modules record in the transaction that commits their change (those of
 * protocol/domain-events.ts), read from the outbox's table: a module that consumes them all is
 * added, and the app's outbox is stopped, so what was recorded stays there to be read.
 */

describe('domain events', () => {
  // Sends a test makes at once must not meet the rate limit.
  const app = useTestApp(
    { DM_RATE_LIMIT_COUNT: 1000 },
    { modules: [...testModules, consumerOf(...domainEventTypes)] },
  );
  const { call, expectStatus } = callsAs(app);
  const sockets = openedSockets(() => app().wsUrl);
  const { recordedBy } = recordedEvents(app);

  beforeAll(async () => {
    await app().outbox.stop();
  });

  describe('user.registered', () => {
    it('is recorded with the account', async () => {
      const username = uniqueUsername();
      let user: TokenResponse | undefined;
      const events = await recordedBy('user.registered', async () => {
        user = await registerUser(app(), username);
      });
      expect(events).toEqual([{ user_id: user?.user.id, username, created_at: user?.user.created_at }]);
    });

    it('is not recorded for a refused registration', async () => {
      const { user } = await registerUser(app());
      const events = await recordedBy('user.registered', async () => {
        const response = await app().http.inject({
          method: 'POST',
          url: '/api/auth/register',
          payload: {
            username: user.username,
            password: 'another password',
            accept_terms: true,
            confirm_18_plus: true,
          },
        });
        expect(response.statusCode).toBe(409);
      });
      expect(events).toEqual([]);
    });
  });

  describe('economy.purchase.completed', () => {
    /** A buyer with coins and a published listing of another user's item. */
    const market = async () => {
      const [admin, seller, buyer] = [
        await registerWithRole(app(), 'admin'),
        await registerUser(app()),
        await registerUser(app()),
      ];
      await economyWrite(admin, '/api/economy/admin/grants', {
        user_id: buyer.user.id,
        amount: 500,
        reason: 'test',
      });
      const item = await economyWrite(seller, '/api/economy/items', { name: 'Hat', asset_type: 'clothing' });
      await economyWrite(seller, `/api/economy/items/${item.id}`, { state: 'published' }, 'PATCH');
      const listing = await economyWrite(seller, '/api/economy/listings', { item_id: item.id, price: 100 });
      return { seller, buyer, listing };
    };
    const economyWrite = async (
      user: TokenResponse,
      url: string,
      payload: object,
      method: 'POST' | 'PATCH' = 'POST',
      key: string = randomUUID(),
    ) => {
      const response = await app().http.inject({
        method,
        url,
        headers: { ...bearer(user.access_token), 'idempotency-key': key },
        payload,
      });
      expect(response.statusCode, response.body).toBeLessThan(300);
      return response.json();
    };

    it('is recorded with the purchase as GET /api/economy/purchases/{id} shows it, and not for its replay', async () => {
      const { buyer, listing } = await market();
      const key = randomUUID();
      let purchase: { id: string } | undefined;
      const events = await recordedBy('economy.purchase.completed', async () => {
        purchase = await economyWrite(
          buyer,
          '/api/economy/purchases',
          { listing_id: listing.id },
          'POST',
          key,
        );
      });
      const shown = (await expectStatus(200, 'GET', `/api/economy/purchases/${purchase?.id}`, buyer)).json();
      expect(events).toEqual([{ purchase: shown }]);
      const replay = await recordedBy('economy.purchase.completed', async () => {
        const again = await app().http.inject({
          method: 'POST',
          url: '/api/economy/purchases',
          headers: { ...bearer(buyer.access_token), 'idempotency-key': key },
          payload: { listing_id: listing.id },
        });
        expect(again.headers['idempotent-replayed']).toBe('true');
      });
      expect(replay).toEqual([]);
    });

    it('is not recorded for a refused purchase', async () => {
      const { seller, listing } = await market();
      const events = await recordedBy('economy.purchase.completed', async () => {
        const response = await app().http.inject({
          method: 'POST',
          url: '/api/economy/purchases',
          headers: { ...bearer(seller.access_token), 'idempotency-key': randomUUID() },
          payload: { listing_id: listing.id },
        });
        expect(response.statusCode).toBe(422);
      });
      expect(events).toEqual([]);
    });
  });

  describe('group.member.joined', () => {
    const newGroup = async (owner: TokenResponse, joinPolicy: 'open' | 'closed') =>
      (
        await expectStatus(201, 'POST', '/api/groups', owner, {
          name: `Group ${randomUUID().slice(0, 8)}`,
          join_policy: joinPolicy,
        })
      ).json() as Promise<{ id: string }>;

    it('is recorded when a user joins an open group, and not for a refused join', async () => {
      const [owner, joiner] = [await registerUser(app()), await registerUser(app())];
      const group = await newGroup(owner, 'open');
      const joined = await recordedBy('group.member.joined', () =>
        expectStatus(201, 'POST', `/api/groups/${group.id}/members`, joiner),
      );
      expect(joined).toEqual([{ group_id: group.id, user_id: joiner.user.id }]);
      const again = await recordedBy('group.member.joined', () =>
        expectStatus(409, 'POST', `/api/groups/${group.id}/members`, joiner),
      );
      expect(again).toEqual([]);
    });

    it('is recorded when a join request is approved, not when it is made or refused', async () => {
      const [owner, requester] = [await registerUser(app()), await registerUser(app())];
      const group = await newGroup(owner, 'closed');
      const asked = await recordedBy('group.member.joined', () =>
        expectStatus(202, 'POST', `/api/groups/${group.id}/members`, requester),
      );
      expect(asked).toEqual([]);
      const approved = await recordedBy('group.member.joined', () =>
        expectStatus(201, 'POST', `/api/groups/${group.id}/requests/${requester.user.id}/approve`, owner),
      );
      expect(approved).toEqual([{ group_id: group.id, user_id: requester.user.id }]);
      const twice = await recordedBy('group.member.joined', () =>
        expectStatus(404, 'POST', `/api/groups/${group.id}/requests/${requester.user.id}/approve`, owner),
      );
      expect(twice).toEqual([]);
    });
  });

  describe('dm.message', () => {
    it('is recorded with the message as dm.send answers it, over REST and over the socket', async () => {
      const [alice, bob] = [await registerUser(app()), await registerUser(app())];
      let first: unknown;
      const overRest = await recordedBy('dm.message', async () => {
        first = (
          await expectStatus(201, 'POST', `/api/chat/dm/${bob.user.id}/messages`, alice, { body: 'hi' })
        ).json();
      });
      expect(overRest).toEqual([{ message: first }]);
      const socket = await sockets.open(bob.access_token);
      let answer: unknown;
      const overSocket = await recordedBy('dm.message', async () => {
        const ack = await request(socket, 'dm.send', { user_id: alice.user.id, body: 'hello back' });
        expect(ack.t).toBe('ack');
        answer = ack.d;
      });
      expect(overSocket).toEqual([{ message: answer }]);
      sockets.closeAll();
    });

    it('is recorded for each message a shared store statement stored, and for none it refused', async () => {
      const pairs = await Promise.all(
        Array.from(
          { length: 8 },
          async () => [await registerUser(app()), await registerUser(app())] as const,
        ),
      );
      // Every pair but the last already talks (the last one's send creates its conversation); the
      // first pair has since been blocked.
      const conversations: string[] = [];
      for (const [from, to] of pairs.slice(0, -1)) {
        const first = await expectStatus(201, 'POST', `/api/chat/dm/${to.user.id}/messages`, from, {
          body: 'hi',
        });
        conversations.push(first.json().conversation_id);
      }
      const blocked = pairs[0] as (typeof pairs)[number];
      await expectStatus(204, 'PUT', `/api/blocks/${blocked[0].user.id}`, blocked[1]);
      const before = await statementBatches(app(), 'dm_store');
      // As test/chat/dm.test.ts does: the sends wait while conversations are locked, then share a statement.
      const busy = statementsAtOnce(app().db.poolSize);
      let sending: Promise<LightMyRequestResponse[]> | undefined;
      const events = await recordedBy('dm.message', () =>
        whileTransactionOpen(
          app,
          (tx) =>
            executeBound(tx, 'select 1 from conversations where id = any($1::uuid[]) for update', [
              conversations.slice(1, busy + 1),
            ]),
          () => {
            sending = Promise.all(
              pairs.map(([from, to]) =>
                call('POST', `/api/chat/dm/${to.user.id}/messages`, from, { body: 'again' }),
              ),
            );
          },
        ).then(() => sending),
      );
      const answers = (await sending) ?? [];
      expect(answers.map((answer) => answer.statusCode)).toEqual([403, ...pairs.slice(1).map(() => 201)]);
      const after = await statementBatches(app(), 'dm_store');
      expect(after.statements - before.statements).toBeLessThan(after.calls - before.calls);
      const byId = (list: { id: string }[]) => [...list].sort((a, b) => a.id.localeCompare(b.id));
      expect(byId(events.map(({ message }) => message))).toEqual(
        byId(answers.slice(1).map((answer) => answer.json())),
      );
    });

    it('is not recorded for a refused message', async () => {
      const [alice, bob] = [await registerUser(app()), await registerUser(app())];
      await expectStatus(201, 'POST', `/api/chat/dm/${bob.user.id}/messages`, alice, {
        body: 'before the block',
      });
      await expectStatus(204, 'PUT', `/api/blocks/${alice.user.id}`, bob);
      const events = await recordedBy('dm.message', () =>
        expectStatus(403, 'POST', `/api/chat/dm/${bob.user.id}/messages`, alice, { body: 'after the block' }),
      );
      expect(events).toEqual([]);
    });
  });
});
