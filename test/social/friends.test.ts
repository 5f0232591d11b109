import { describe, expect, it } from 'vitest';
import { PASSWORD } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { socialGraph } from './graph.js';

const NOBODY = '0195f2d0-0000-7000-8000-000000000000';

/** Every route that names another user in its path or body, as [method, url, body]. */
const targeted = (id: string) =>
  [
    ['POST', '/api/friends/requests', { user_id: id }],
    ['POST', `/api/friends/requests/${id}/accept`, undefined],
    ['POST', `/api/friends/requests/${id}/decline`, undefined],
    ['DELETE', `/api/friends/requests/${id}`, undefined],
    ['DELETE', `/api/friends/${id}`, undefined],
    ['PUT', `/api/follows/${id}`, undefined],
    ['DELETE', `/api/follows/${id}`, undefined],
    ['PUT', `/api/blocks/${id}`, undefined],
    ['DELETE', `/api/blocks/${id}`, undefined],
  ] as const;

describe('friend requests and friendships', () => {
  const app = useTestApp();
  const { call, expectStatus, rowsOf, befriend, users } = socialGraph(app);

  it('sends a request as pending (201), listed incoming for the addressee and outgoing for the requester', async () => {
    const [alice, bob] = await users(2);
    const sent = await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    expect(sent.json()).toEqual({ status: 'pending' });
    expect((await rowsOf(alice.user.id)).friendships).toEqual([
      { requester_id: alice.user.id, addressee_id: bob.user.id, status: 'pending' },
    ]);

    const incoming = await expectStatus(200, 'GET', '/api/friends/requests?direction=incoming', bob);
    expect(incoming.json()).toEqual({
      items: [
        {
          user: { id: alice.user.id, username: alice.user.username },
          direction: 'incoming',
          created_at: expect.any(String),
        },
      ],
      next_cursor: null,
    });
    const byDefault = await expectStatus(200, 'GET', '/api/friends/requests', bob);
    expect(byDefault.json()).toEqual(incoming.json());
    const outgoing = await expectStatus(200, 'GET', '/api/friends/requests?direction=outgoing', alice);
    expect(outgoing.json().items).toEqual([
      expect.objectContaining({
        user: { id: bob.user.id, username: bob.user.username },
        direction: 'outgoing',
      }),
    ]);
    expect((await expectStatus(200, 'GET', '/api/friends/requests', alice)).json().items).toEqual([]);
  });

  it('accepts a request (200): both list each other as friends and the request is gone from the lists', async () => {
    const [alice, bob] = await users(2);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    const accepted = await expectStatus(200, 'POST', `/api/friends/requests/${alice.user.id}/accept`, bob);
    expect(accepted.json()).toEqual({ status: 'accepted' });

    expect((await expectStatus(200, 'GET', '/api/friends', alice)).json()).toEqual({
      items: [{ user: { id: bob.user.id, username: bob.user.username }, since: expect.any(String) }],
      next_cursor: null,
    });
    expect((await expectStatus(200, 'GET', '/api/friends', bob)).json().items).toEqual([
      { user: { id: alice.user.id, username: alice.user.username }, since: expect.any(String) },
    ]);
    expect((await expectStatus(200, 'GET', '/api/friends/requests', bob)).json().items).toEqual([]);
    const [row] = (await rowsOf(alice.user.id)).friendships;
    expect(row).toEqual({ requester_id: alice.user.id, addressee_id: bob.user.id, status: 'accepted' });
  });

  it("accepts the other user's pending request when asked back (200), keeping one row for the pair", async () => {
    const [alice, bob] = await users(2);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    const back = await expectStatus(200, 'POST', '/api/friends/requests', bob, { user_id: alice.user.id });
    expect(back.json()).toEqual({ status: 'accepted' });
    expect((await rowsOf(alice.user.id)).friendships).toEqual([
      { requester_id: alice.user.id, addressee_id: bob.user.id, status: 'accepted' },
    ]);
  });

  it('ends two users asking each other at once in one accepted friendship', async () => {
    const pairs = await Promise.all(Array.from({ length: 5 }, () => users(2)));
    await Promise.all(
      pairs.map(async ([a, b]) => {
        const answers = await Promise.all([
          call('POST', '/api/friends/requests', a, { user_id: b.user.id }),
          call('POST', '/api/friends/requests', b, { user_id: a.user.id }),
        ]);
        const outcomes = answers.map((r) => `${r.statusCode} ${r.json().status}`);
        expect(outcomes.sort()).toEqual(['200 accepted', '201 pending']);
        const rows = (await rowsOf(a.user.id)).friendships;
        expect(rows).toEqual([expect.objectContaining({ status: 'accepted' })]);
      }),
    );
  });

  it('refuses a second request while one is pending, and a request between friends (409), writing nothing', async () => {
    const [alice, bob, carol] = await users(3);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    const again = await expectStatus(409, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    expect(again.json().code).toBe('CONFLICT');

    await befriend(alice, carol);
    const before = await rowsOf(alice.user.id);
    for (const [from, to] of [
      [alice, carol],
      [carol, alice],
    ] as const) {
      const response = await expectStatus(409, 'POST', '/api/friends/requests', from, {
        user_id: to.user.id,
      });
      expect(response.json().code).toBe('CONFLICT');
    }
    const accept = await expectStatus(409, 'POST', `/api/friends/requests/${alice.user.id}/accept`, carol);
    expect(accept.json().code).toBe('CONFLICT');
    expect(await rowsOf(alice.user.id)).toEqual(before);
  });

  it('answers 404 to accept, decline and cancel when there is no such pending request, and writes nothing', async () => {
    const [alice, bob] = await users(2);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    const before = await rowsOf(alice.user.id, bob.user.id);
    // Alice asked Bob: she can neither accept nor decline her own request, nor Bob cancel it.
    for (const [method, url, user] of [
      ['POST', `/api/friends/requests/${bob.user.id}/accept`, alice],
      ['POST', `/api/friends/requests/${bob.user.id}/decline`, alice],
      ['DELETE', `/api/friends/requests/${alice.user.id}`, bob],
    ] as const) {
      const response = await expectStatus(404, method, url, user);
      expect(response.json().code).toBe('NOT_FOUND');
    }
    expect(await rowsOf(alice.user.id, bob.user.id)).toEqual(before);
  });

  it('declines a request (204) without telling the requester, and lets them cancel theirs (204)', async () => {
    const [alice, bob, carol] = await users(3);
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    await expectStatus(204, 'POST', `/api/friends/requests/${alice.user.id}/decline`, bob);
    expect((await rowsOf(alice.user.id)).friendships).toEqual([]);

    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: carol.user.id });
    await expectStatus(204, 'DELETE', `/api/friends/requests/${carol.user.id}`, alice);
    expect((await rowsOf(alice.user.id)).friendships).toEqual([]);
    expect((await expectStatus(200, 'GET', '/api/friends/requests', carol)).json().items).toEqual([]);
  });

  it('ends a friendship from either side (204), and answers 404 for a user who is not a friend', async () => {
    const [alice, bob] = await users(2);
    await befriend(alice, bob);
    await expectStatus(204, 'DELETE', `/api/friends/${alice.user.id}`, bob);
    expect((await rowsOf(alice.user.id)).friendships).toEqual([]);
    expect((await expectStatus(200, 'GET', '/api/friends', alice)).json().items).toEqual([]);

    const again = await expectStatus(404, 'DELETE', `/api/friends/${alice.user.id}`, bob);
    expect(again.json().code).toBe('NOT_FOUND');
    await expectStatus(201, 'POST', '/api/friends/requests', alice, { user_id: bob.user.id });
    // A pending request is not a friendship: it is withdrawn or declined instead.
    await expectStatus(404, 'DELETE', `/api/friends/${bob.user.id}`, alice);
    expect((await rowsOf(alice.user.id)).friendships).toHaveLength(1);
  });

  it.each(targeted('{id}'))(
    'refuses %s %s aimed at yourself (422 VALIDATION_FAILED) and writes nothing',
    async (method, url, body) => {
      const [me] = await users(1);
      const response = await expectStatus(
        422,
        method,
        url.replace('{id}', me.user.id),
        me,
        body && { user_id: me.user.id },
      );
      expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'user_id' }] });
      expect(await rowsOf(me.user.id)).toEqual({ friendships: [], follows: [], blocks: [] });
    },
  );

  it.each([
    ['names no user', NOBODY],
    ['is not an id', 'not-a-uuid'],
  ])('answers 404 NOT_FOUND on every route when the user id %s, and writes nothing', async (_case, id) => {
    const [me] = await users(1);
    for (const [method, url, body] of targeted(id)) {
      const response = await expectStatus(404, method, url, me, body);
      expect(response.json().code).toBe('NOT_FOUND');
    }
    for (const list of ['followers', 'following'])
      expect((await expectStatus(404, 'GET', `/api/users/${id}/${list}`, me)).json().code).toBe('NOT_FOUND');
    expect(await rowsOf(me.user.id)).toEqual({ friendships: [], follows: [], blocks: [] });
  });

  it('pages friends 3 at a time without gaps or duplicates while friendships are added and removed between pages', async () => {
    const [me, late, ...friends] = await users(9);
    for (const friend of friends) await befriend(friend, me);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/api/friends?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await expectStatus(200, 'GET', url, me)).json();
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((item: { user: { id: string } }) => item.user.id));
      cursor = page.next_cursor;
      // A friendship newer than every page comes before the first: it must not shift later pages.
      if (pages++ === 0) await befriend(late, me);
    } while (cursor);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual(friends.map((f) => f.user.id).sort());
  });

  it('refuses a cursor the list did not give out (422 naming cursor) and a limit over 100', async () => {
    const [me] = await users(1);
    for (const cursor of ['nonsense', Buffer.from('[1,2]').toString('base64url')]) {
      const response = await expectStatus(422, 'GET', `/api/friends?cursor=${cursor}`, me);
      expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'cursor' }] });
    }
    expect((await expectStatus(422, 'GET', '/api/blocks?limit=101', me)).json().code).toBe(
      'VALIDATION_FAILED',
    );
    expect((await expectStatus(422, 'GET', '/api/friends/requests?direction=sideways', me)).json().code).toBe(
      'VALIDATION_FAILED',
    );
  });

  it("removes a deleted account's friendships, requests, follows and blocks (cascade)", async () => {
    const [leaving, friend, asked, follower, blocker] = await users(5);
    await befriend(leaving, friend);
    await expectStatus(201, 'POST', '/api/friends/requests', leaving, { user_id: asked.user.id });
    await expectStatus(204, 'PUT', `/api/follows/${leaving.user.id}`, follower);
    await expectStatus(204, 'PUT', `/api/blocks/${leaving.user.id}`, blocker);
    await expectStatus(204, 'DELETE', '/api/users/me', leaving, { password: PASSWORD });
    expect(await rowsOf(leaving.user.id)).toEqual({ friendships: [], follows: [], blocks: [] });
    expect((await expectStatus(200, 'GET', '/api/friends', friend)).json().items).toEqual([]);
  });
});
