import { describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/app.js';
import { socialGraph } from './graph.js';

describe('follows and blocks', () => {
  const app = useTestApp();
  const { call, expectStatus, rowsOf, befriend, users } = socialGraph(app);
  const itemIds = async (url: string, viewer: Parameters<typeof call>[2]) =>
    (await expectStatus(200, 'GET', url, viewer))
      .json()
      .items.map((item: { user: { id: string } }) => item.user.id);

  it('follows and unfollows idempotently (204 twice each), listed as followers and following', async () => {
    const [fan, star] = await users(2);
    await expectStatus(204, 'PUT', `/api/follows/${star.user.id}`, fan);
    await expectStatus(204, 'PUT', `/api/follows/${star.user.id}`, fan);
    expect((await rowsOf(fan.user.id)).follows).toEqual([
      { follower_id: fan.user.id, followed_id: star.user.id },
    ]);
    const followers = await expectStatus(200, 'GET', `/api/users/${star.user.id}/followers`, fan);
    expect(followers.json()).toEqual({
      items: [{ user: { id: fan.user.id, username: fan.user.username }, since: expect.any(String) }],
      next_cursor: null,
    });
    expect(await itemIds(`/api/users/${fan.user.id}/following`, star)).toEqual([star.user.id]);
    expect(await itemIds(`/api/users/${fan.user.id}/followers`, fan)).toEqual([]);

    await expectStatus(204, 'DELETE', `/api/follows/${star.user.id}`, fan);
    await expectStatus(204, 'DELETE', `/api/follows/${star.user.id}`, fan);
    expect((await rowsOf(fan.user.id)).follows).toEqual([]);
  });

  it('blocks and unblocks idempotently (204 twice each), listed in the blocker’s blocks', async () => {
    const [blocker, blocked] = await users(2);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, blocker);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, blocker);
    expect((await rowsOf(blocker.user.id)).blocks).toEqual([
      { blocker_id: blocker.user.id, blocked_id: blocked.user.id },
    ]);
    expect((await expectStatus(200, 'GET', '/api/blocks', blocker)).json()).toEqual({
      items: [{ user: { id: blocked.user.id, username: blocked.user.username }, since: expect.any(String) }],
      next_cursor: null,
    });
    expect(await itemIds('/api/blocks', blocked)).toEqual([]);

    await expectStatus(204, 'DELETE', `/api/blocks/${blocked.user.id}`, blocker);
    await expectStatus(204, 'DELETE', `/api/blocks/${blocked.user.id}`, blocker);
    expect((await rowsOf(blocker.user.id)).blocks).toEqual([]);
  });

  it.each([
    ['the caller blocked the user', true],
    ['the user blocked the caller', false],
  ])(
    'refuses friend requests and follows with 403 FORBIDDEN when %s, and writes nothing',
    async (_case, byCaller) => {
      const [caller, other] = await users(2);
      if (byCaller) await expectStatus(204, 'PUT', `/api/blocks/${other.user.id}`, caller);
      else await expectStatus(204, 'PUT', `/api/blocks/${caller.user.id}`, other);
      const before = await rowsOf(caller.user.id);
      const request = await expectStatus(403, 'POST', '/api/friends/requests', caller, {
        user_id: other.user.id,
      });
      expect(request.json().code).toBe('FORBIDDEN');
      const follow = await expectStatus(403, 'PUT', `/api/follows/${other.user.id}`, caller);
      expect(follow.json().code).toBe('FORBIDDEN');
      expect(await rowsOf(caller.user.id)).toEqual(before);
    },
  );

  it('ends friendship, pending requests and follows in both directions when blocking', async () => {
    const [blocker, friend, asker, asked] = await users(4);
    await befriend(friend, blocker);
    await expectStatus(201, 'POST', '/api/friends/requests', asker, { user_id: blocker.user.id });
    await expectStatus(201, 'POST', '/api/friends/requests', blocker, { user_id: asked.user.id });
    for (const other of [friend, asker]) {
      await expectStatus(204, 'PUT', `/api/follows/${other.user.id}`, blocker);
      await expectStatus(204, 'PUT', `/api/follows/${blocker.user.id}`, other);
    }
    for (const other of [friend, asker, asked])
      await expectStatus(204, 'PUT', `/api/blocks/${other.user.id}`, blocker);

    const rows = await rowsOf(blocker.user.id);
    expect(rows.friendships).toEqual([]);
    expect(rows.follows).toEqual([]);
    expect(rows.blocks).toHaveLength(3);
    expect(await itemIds('/api/friends', friend)).toEqual([]);
    // Unblocking brings nothing back.
    await expectStatus(204, 'DELETE', `/api/blocks/${friend.user.id}`, blocker);
    expect((await rowsOf(blocker.user.id, friend.user.id)).friendships).toEqual([]);
  });

  it('keeps the other user’s unrelated rows when blocking', async () => {
    const [blocker, blocked, bystander] = await users(3);
    await befriend(blocked, bystander);
    await expectStatus(204, 'PUT', `/api/follows/${bystander.user.id}`, blocked);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, blocker);
    const rows = await rowsOf(bystander.user.id);
    expect(rows.friendships).toHaveLength(1);
    expect(rows.follows).toHaveLength(1);
  });

  it('shows follow lists as the owner’s profile_visibility allows: 403 when it hides them, the owner always', async () => {
    const [owner, friend, stranger] = await users(3);
    await befriend(owner, friend);
    await expectStatus(204, 'PUT', `/api/follows/${owner.user.id}`, stranger);
    const setVisibility = (profile_visibility: string) =>
      expectStatus(200, 'PUT', '/api/profile/me', owner, { privacy: { profile_visibility } });

    await setVisibility('friends');
    expect(await itemIds(`/api/users/${owner.user.id}/followers`, friend)).toEqual([stranger.user.id]);
    const hidden = await expectStatus(403, 'GET', `/api/users/${owner.user.id}/followers`, stranger);
    expect(hidden.json().code).toBe('FORBIDDEN');

    await setVisibility('private');
    for (const list of ['followers', 'following'])
      expect((await call('GET', `/api/users/${owner.user.id}/${list}`, friend)).statusCode).toBe(403);
    expect(await itemIds(`/api/users/${owner.user.id}/followers`, owner)).toEqual([stranger.user.id]);
  });

  it('answers 404 for the follow lists of a user with a block between them and the viewer, either way', async () => {
    const [blocker, blocked] = await users(2);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, blocker);
    for (const [viewer, owner] of [
      [blocked, blocker],
      [blocker, blocked],
    ] as const) {
      for (const list of ['followers', 'following']) {
        const response = await expectStatus(404, 'GET', `/api/users/${owner.user.id}/${list}`, viewer);
        expect(response.json().code).toBe('NOT_FOUND');
      }
    }
  });
});
