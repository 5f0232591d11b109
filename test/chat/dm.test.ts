import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import {
  insertMessages,
  type NewMessage,
  refreshConversationBlock,
} from '../../src/modules/chat/dm.repository.js';
import { insertBlock, lockPair } from '../../src/modules/social/social.repository.js';
import { statementsAtOnce } from '../../src/platform/batcher.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { statementBatches, useTestApp, whileTransactionOpen } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { dmCalls } from './dm.js';
import { readAllPages } from './pages.js';

type Pair = readonly [TokenResponse, TokenResponse];

describe('direct messages', () => {
  const app = useTestApp();
  const { call, expectStatus, send, sent, rowsOf } = dmCalls(app);
  const user = () => registerUser(app());

  it('sends a trimmed message (201) and creates the conversation with both participants on the first send', async () => {
    const [alice, bob] = [await user(), await user()];
    const message = await sent(alice, bob, '  hello bob  ');
    expect(message).toEqual({
      id: expect.any(String),
      conversation_id: expect.any(String),
      sender_id: alice.user.id,
      body: 'hello bob',
      created_at: expect.any(String),
      filtered: false,
    });
    const participants = await queryRows(
      app().db,
      'select user_id from conversation_participants where conversation_id = ? order by user_id',
      [message.conversation_id],
    );
    expect(participants).toEqual([alice.user.id, bob.user.id].sort().map((user_id) => ({ user_id })));
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'hello bob', filtered: false }]);
  });

  it('uses one conversation for the pair, whoever writes first and even when both write at once', async () => {
    const [alice, bob] = [await user(), await user()];
    const [first, second] = await Promise.all([sent(alice, bob, 'hi'), sent(bob, alice, 'hey')]);
    const third = await sent(bob, alice, 'again');
    expect(new Set([first.conversation_id, second.conversation_id, third.conversation_id]).size).toBe(1);
    expect((await rowsOf(alice.user.id)).conversations).toEqual([{ id: first.conversation_id }]);
  });

  it('keeps 2000 characters after trimming (an emoji counts once), however much whitespace surrounds them', async () => {
    const [alice, bob] = [await user(), await user()];
    const body = `${'😀'.repeat(1000)}${'x'.repeat(1000)}`;
    expect((await sent(alice, bob, `\n  ${body}  \t`)).body).toBe(body);
  });

  it('masks disallowed words, sets filtered and stores the masked body', async () => {
    const [alice, bob] = [await user(), await user()];
    const message = await sent(alice, bob, 'what the fuck');
    expect(message).toMatchObject({ body: 'what the ****', filtered: true });
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'what the ****', filtered: true }]);
  });

  it.each([
    ['over 2000 characters after trimming', ` ${'x'.repeat(2001)} `, 'body'],
    // The rules of the request schema, which names the field by where it came from.
    ['that shows nothing', ' \n\t ', 'body.body'],
    ['holding U+0000', 'a\u0000b', 'body.body'],
    ['holding a lone surrogate', 'a\uD800b', 'body.body'],
  ])('refuses a body %s with 422 VALIDATION_FAILED and writes nothing', async (_case, body, path) => {
    const [alice, bob] = [await user(), await user()];
    const response = await send(alice, bob.user.id, body);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [expect.objectContaining({ path })],
    });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it('refuses a message to oneself with 422 and writes nothing', async () => {
    const alice = await user();
    const response = await send(alice, alice.user.id.toUpperCase(), 'me');
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'user_id' }] });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it.each([
    ['an unknown user', '0190a000-0000-7000-8000-00000000dead'],
    ['an id that cannot name a user', 'not-a-user'],
  ])('answers 404 NOT_FOUND for a message to %s and writes nothing', async (_case, peer) => {
    const alice = await user();
    const response = await send(alice, peer, 'anyone?');
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('NOT_FOUND');
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it.each([
    ['the sender blocked the peer', true],
    ['the peer blocked the sender', false],
  ])('refuses a message with 403 FORBIDDEN when %s, and writes nothing', async (_case, bySender) => {
    const [alice, bob] = [await user(), await user()];
    await sent(alice, bob, 'before the block');
    if (bySender) await expectStatus(204, 'PUT', `/api/blocks/${bob.user.id}`, alice);
    else await expectStatus(204, 'PUT', `/api/blocks/${alice.user.id}`, bob);
    const response = await send(alice, bob.user.id, 'after the block');
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('FORBIDDEN');
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'before the block', filtered: false }]);
  });

  it("refuses with 403 what the peer's dm_policy forbids: nobody, or friends from a non-friend", async () => {
    const [alice, bob, friend] = [await user(), await user(), await user()];
    await expectStatus(200, 'PUT', '/api/profile/me', bob, { privacy: { dm_policy: 'nobody' } });
    const toNobody = await send(alice, bob.user.id, 'hi');
    expect([toNobody.statusCode, toNobody.json().code]).toEqual([403, 'FORBIDDEN']);

    await expectStatus(200, 'PUT', '/api/profile/me', bob, { privacy: { dm_policy: 'friends' } });
    const fromStranger = await send(alice, bob.user.id, 'hi');
    expect([fromStranger.statusCode, fromStranger.json().code]).toEqual([403, 'FORBIDDEN']);
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });

    await expectStatus(201, 'POST', '/api/friends/requests', friend, { user_id: bob.user.id });
    await expectStatus(200, 'POST', `/api/friends/requests/${friend.user.id}/accept`, bob);
    await sent(friend, bob, 'hi friend');
  });

  it("applies the peer's dm_policy in an existing conversation too: a changed policy refuses with 403 and writes nothing", async () => {
    const [alice, bob, friend] = [await user(), await user(), await user()];
    await expectStatus(201, 'POST', '/api/friends/requests', friend, { user_id: bob.user.id });
    await expectStatus(200, 'POST', `/api/friends/requests/${friend.user.id}/accept`, bob);
    await sent(alice, bob, 'while anyone may write');
    await sent(friend, bob, 'from a friend');

    await expectStatus(200, 'PUT', '/api/profile/me', bob, { privacy: { dm_policy: 'friends' } });
    const fromStranger = await send(alice, bob.user.id, 'still there?');
    expect([fromStranger.statusCode, fromStranger.json().code]).toEqual([403, 'FORBIDDEN']);
    await sent(friend, bob, 'friends still may');

    await expectStatus(200, 'PUT', '/api/profile/me', bob, { privacy: { dm_policy: 'nobody' } });
    const fromFriend = await send(friend, bob.user.id, 'and now?');
    expect([fromFriend.statusCode, fromFriend.json().code]).toEqual([403, 'FORBIDDEN']);
    expect((await rowsOf(alice.user.id)).messages).toEqual([
      { body: 'while anyone may write', filtered: false },
    ]);
    expect((await rowsOf(friend.user.id)).messages).toEqual([
      { body: 'from a friend', filtered: false },
      { body: 'friends still may', filtered: false },
    ]);
  });
  it('pages the history newest first without gaps or duplicates, keyed by before', async () => {
    const [alice, bob] = [await user(), await user()];
    const bodies: string[] = [];
    for (let i = 0; i < 7; i++) {
      bodies.push(`m${i}`);
      await sent(i % 2 === 0 ? alice : bob, i % 2 === 0 ? bob : alice, `m${i}`);
    }
    const seen: string[] = [];
    let before: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const query: string = `limit=3${before ? `&before=${before}` : ''}`;
      const page = (
        await expectStatus(200, 'GET', `/api/chat/dm/${bob.user.id}/messages?${query}`, alice)
      ).json();
      seen.push(...page.items.map((m: { body: string }) => m.body));
      before = page.next_cursor;
      if (!before) break;
    }
    expect(seen).toEqual([...bodies].reverse());
  });

  it('pages the history without gaps or duplicates while both users keep sending meanwhile', async () => {
    const [alice, bob] = [await user(), await user()];
    const before = Array.from({ length: 8 }, (_, i) => `before ${i}`);
    for (const [i, body] of before.entries()) {
      await sent(i % 2 === 0 ? alice : bob, i % 2 === 0 ? bob : alice, body);
    }
    const meanwhile: Promise<unknown>[] = [];
    const pages = await readAllPages(expectStatus, alice, `/api/chat/dm/${bob.user.id}/messages`, 3, () => {
      meanwhile.push(sent(alice, bob, `meanwhile ${meanwhile.length}`));
      meanwhile.push(sent(bob, alice, `meanwhile ${meanwhile.length}`));
    });
    await Promise.all(meanwhile);
    // Everything sent meanwhile is newer than the first page, so no later page shifts.
    expect(pages).toEqual([...before].reverse());
    expect(meanwhile.length).toBeGreaterThan(0);
    const stored = await queryRows(
      app().db,
      'select 1 from messages where sender_id = any(array[?, ?]::uuid[])',
      [alice.user.id, bob.user.id],
    );
    expect(stored).toHaveLength(before.length + meanwhile.length);
  });

  it('answers an empty history before the first message, 404 for an unknown peer and 422 for a foreign cursor', async () => {
    const [alice, bob] = [await user(), await user()];
    expect((await expectStatus(200, 'GET', `/api/chat/dm/${bob.user.id}/messages`, alice)).json()).toEqual({
      items: [],
      next_cursor: null,
    });
    const unknown = await call('GET', '/api/chat/dm/0190a000-0000-7000-8000-00000000dead/messages', alice);
    expect([unknown.statusCode, unknown.json().code]).toEqual([404, 'NOT_FOUND']);
    const bad = await call('GET', `/api/chat/dm/${bob.user.id}/messages?before=bm9wZQ`, alice);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'before' }] });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it('lists conversations by latest activity with unread peer messages, and reading the history resets the count', async () => {
    const [me, talkative, quiet, answered] = [await user(), await user(), await user(), await user()];
    await sent(me, answered, 'hello there');
    await sent(talkative, me, 'one');
    await sent(me, talkative, 'mine do not count');
    await sent(talkative, me, 'two');
    await sent(talkative, me, 'three');
    await sent(quiet, me, 'only one');
    const list = async () => (await expectStatus(200, 'GET', '/api/chat/dm/conversations', me)).json();
    const summary = (page: {
      items: { peer: { id: string }; unread_count: number; last_message: { body: string } }[];
    }) => page.items.map((c) => [c.peer.id, c.unread_count, c.last_message.body]);

    const first = await list();
    expect(first.next_cursor).toBeNull();
    expect(first.items[0].peer).toEqual({ id: quiet.user.id, username: quiet.user.username });
    expect(summary(first)).toEqual([
      [quiet.user.id, 1, 'only one'],
      [talkative.user.id, 3, 'three'],
      [answered.user.id, 0, 'hello there'],
    ]);

    await expectStatus(200, 'GET', `/api/chat/dm/${talkative.user.id}/messages?limit=1`, me);
    const [read] = await queryRows<{ last_read_at: Date | null }>(
      app().db,
      `select p.last_read_at from conversation_participants p where p.conversation_id = ? and p.user_id = ?`,
      [first.items[1].conversation_id, me.user.id],
    );
    expect(read?.last_read_at).not.toBeNull();
    expect(summary(await list())).toEqual([
      [quiet.user.id, 1, 'only one'],
      [talkative.user.id, 0, 'three'],
      [answered.user.id, 0, 'hello there'],
    ]);
    // The peer's own count is theirs: reading did not touch it.
    const theirs = (await expectStatus(200, 'GET', '/api/chat/dm/conversations', talkative)).json();
    expect(theirs.items.map((c: { unread_count: number }) => c.unread_count)).toEqual([1]);
  });

  it('pages the conversation list without gaps or duplicates', async () => {
    const me = await user();
    const peers = [await user(), await user(), await user()];
    for (const peer of peers) await sent(peer, me, 'hi');
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const query: string = `limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await expectStatus(200, 'GET', `/api/chat/dm/conversations?${query}`, me)).json();
      seen.push(...page.items.map((c: { peer: { id: string } }) => c.peer.id));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(peers.map((p) => p.user.id).reverse());
  });

  it('stores the sends that wait while the store statements are busy with one statement, answering each on its own', async () => {
    const pairs = await Promise.all(
      Array.from({ length: 12 }, async () => [await user(), await user()] as const),
    );
    // Every pair but the last already talks; two of them have since closed the door.
    const conversations: string[] = [];
    for (const [from, to] of pairs.slice(0, -1))
      conversations.push((await sent(from, to, 'hello')).conversation_id);
    const [blockedPair, privatePair, maskedPair, newPair] = pairs.slice(-4) as [Pair, Pair, Pair, Pair];
    await expectStatus(204, 'PUT', `/api/blocks/${blockedPair[0].user.id}`, blockedPair[1]);
    await expectStatus(200, 'PUT', '/api/profile/me', privatePair[1], { privacy: { dm_policy: 'nobody' } });
    const before = await statementBatches(app(), 'dm_store');

    // The first pairs' conversations are locked meanwhile, one for each statement that may run at
    // once (ChatService's storeConcurrency): their sends wait, and so do the rest.
    const busy = statementsAtOnce(app().db.poolSize);
    let sending: Promise<{ statusCode: number; json(): unknown }[]> | undefined;
    await whileTransactionOpen(
      app,
      (em) =>
        executeBound(em, 'select 1 from conversations where id = any($1::uuid[]) for update', [
          conversations.slice(0, busy),
        ]),
      () => {
        sending = Promise.all(
          pairs.map(([from, to]) =>
            send(from, to.user.id, from === maskedPair[0] ? 'what the fuck' : 'again'),
          ),
        );
      },
    );
    const answers = (await sending) ?? [];

    const answerOf = (pair: Pair) => answers[pairs.indexOf(pair)];
    expect([answerOf(blockedPair)?.statusCode, answerOf(privatePair)?.statusCode]).toEqual([403, 403]);
    for (const pair of pairs.filter((p) => p !== blockedPair && p !== privatePair)) {
      expect(answerOf(pair)?.statusCode).toBe(201);
    }
    expect(answerOf(maskedPair)?.json()).toMatchObject({ body: 'what the ****', filtered: true });
    expect((await rowsOf(blockedPair[0].user.id)).messages).toEqual([{ body: 'hello', filtered: false }]);
    expect((await rowsOf(privatePair[0].user.id)).messages).toEqual([{ body: 'hello', filtered: false }]);
    expect((await rowsOf(newPair[0].user.id)).messages).toEqual([{ body: 'again', filtered: false }]);
    const after = await statementBatches(app(), 'dm_store');
    expect(after.calls - before.calls).toBe(pairs.length);
    // The locked pairs' statements, then one for all the sends that waited.
    expect(after.statements - before.statements).toBe(busy + 1);
  });

  it('stores several messages in one statement, answering in order: two in one conversation, one without a conversation', async () => {
    const [alice, bob, carol] = [await user(), await user(), await user()];
    const { conversation_id } = await sent(alice, bob, 'first');
    const at = (ms: number) => new Date(Date.parse('2030-01-01T00:00:00Z') + ms);
    const message = (from: string, to: string, body: string, ms: number): NewMessage => ({
      id: newId(),
      senderId: from,
      peerId: to,
      body,
      filtered: false,
      at: at(ms),
    });
    const batch = [
      message(alice.user.id, bob.user.id, 'one', 1),
      message(bob.user.id, alice.user.id, 'two', 2),
      message(alice.user.id, carol.user.id, 'nowhere yet', 3),
    ];
    const outcomes = await insertMessages(app().db.data, batch, {
      friend: ['everyone', 'friends'],
      other: ['everyone'],
    });
    expect(outcomes.map((outcome) => outcome.message?.body)).toEqual(['one', 'two', undefined]);
    expect(outcomes[2]).toEqual({
      friends: false,
      blocked: false,
      dm_policy: 'everyone',
      message: undefined,
    });
    expect(outcomes[1]?.message).toMatchObject({ id: batch[1]?.id, conversation_id, sender_id: bob.user.id });
    const [conversation] = await queryRows<{ last_message_at: Date }>(
      app().db,
      'select last_message_at from conversations where id = ?',
      [conversation_id],
    );
    expect(new Date(conversation?.last_message_at as Date).toISOString()).toBe(at(2).toISOString());
    expect((await rowsOf(carol.user.id)).conversations).toEqual([]);
  });

  it("deletes the account's conversations with it; the peer's list no longer shows them", async () => {
    const [leaving, staying] = [await user(), await user()];
    const { conversation_id } = await sent(leaving, staying, 'bye');
    await sent(staying, leaving, 'see you');
    await expectStatus(204, 'DELETE', '/api/users/me', leaving, { password: 'correct horse battery' });
    expect(await queryRows(app().db, 'select 1 from conversations where id = ?', [conversation_id])).toEqual(
      [],
    );
    expect(
      await queryRows(app().db, 'select 1 from messages where conversation_id = ?', [conversation_id]),
    ).toEqual([]);
    expect((await expectStatus(200, 'GET', '/api/chat/dm/conversations', staying)).json().items).toEqual([]);
  });
});

describe('direct messages racing a block', () => {
  const app = useTestApp();
  const { send, sent, rowsOf } = dmCalls(app);

  /**
   * Writes a block of `bob` by `alice`'s peer as the social service does (the pair's lock, the
   * block, the conversation's marker), holding the transaction open while `during` runs.
   */
  const blockHeldOpen = (blocker: string, blocked: string, during: () => void) =>
    whileTransactionOpen(
      app,
      async (tx) => {
        await lockPair(tx, blocker, blocked);
        await insertBlock(tx, blocker, blocked, new Date());
        await refreshConversationBlock(tx, blocker, blocked);
      },
      during,
    );

  it('a first DM sent while a block of the pair is being written waits for it, then answers 403 and stores nothing', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    let dm: ReturnType<typeof send> | undefined;
    await blockHeldOpen(bob.user.id, alice.user.id, () => {
      dm = send(alice, bob.user.id, 'slipping through?');
    });
    const answer = await dm;
    expect(answer?.statusCode, answer?.body).toBe(403);
    expect(answer?.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it('a DM in an existing conversation sent while a block is being written waits for it, then answers 403', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    await sent(alice, bob, 'before the block');
    let dm: ReturnType<typeof send> | undefined;
    await blockHeldOpen(bob.user.id, alice.user.id, () => {
      dm = send(alice, bob.user.id, 'slipping through?');
    });
    const answer = await dm;
    expect(answer?.statusCode, answer?.body).toBe(403);
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'before the block', filtered: false }]);
  });

  it('a statement storing several messages while a block of one pair is being written stores only the others', async () => {
    const [alice, bob, carol, dave] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    await sent(alice, bob, 'before the block');
    await sent(carol, dave, 'hi');
    const message = (from: string, to: string, body: string): NewMessage => ({
      id: newId(),
      senderId: from,
      peerId: to,
      body,
      filtered: false,
      at: new Date(),
    });
    let stored: ReturnType<typeof insertMessages> | undefined;
    await blockHeldOpen(bob.user.id, alice.user.id, () => {
      stored = insertMessages(
        app().db.data,
        [
          message(alice.user.id, bob.user.id, 'slipping through?'),
          message(carol.user.id, dave.user.id, 'still here'),
        ],
        { friend: ['everyone', 'friends'], other: ['everyone'] },
      );
    });
    expect((await stored)?.map((outcome) => outcome.message?.body)).toEqual([undefined, 'still here']);
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'before the block', filtered: false }]);
    expect((await rowsOf(carol.user.id)).messages).toEqual([
      { body: 'hi', filtered: false },
      { body: 'still here', filtered: false },
    ]);
  });

  it('marks the conversation blocked while a block stands either way, and clears it on unblock', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const { conversation_id } = await sent(alice, bob, 'hi');
    const blocked = async () =>
      (
        await queryRows<{ blocked: boolean }>(app().db, 'select blocked from conversations where id = ?', [
          conversation_id,
        ])
      )[0]?.blocked;
    const { expectStatus } = callsAs(app);
    await expectStatus(204, 'PUT', `/api/blocks/${alice.user.id}`, bob);
    expect(await blocked()).toBe(true);
    await expectStatus(204, 'PUT', `/api/blocks/${bob.user.id}`, alice);
    await expectStatus(204, 'DELETE', `/api/blocks/${alice.user.id}`, bob);
    expect(await blocked()).toBe(true);
    await expectStatus(204, 'DELETE', `/api/blocks/${bob.user.id}`, alice);
    expect(await blocked()).toBe(false);
    expect((await sent(alice, bob, 'talking again')).conversation_id).toBe(conversation_id);
  });
});
