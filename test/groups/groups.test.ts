import { describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/platform/cursor.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { groupCalls, uniqueGroupName } from './groups.js';

describe('groups', () => {
  const app = useTestApp({
    SOCIAL_RATE_LIMIT_COUNT: 100_000,
    CREATE_RATE_LIMIT_COUNT: 100_000,
    MAX_GROUPS_PER_USER: 3,
  });
  const { call, expectStatus, createGroup, joined, setRole } = groupCalls(app);
  const groupsNamed = (name: string) =>
    queryRows(app().db, 'select id from groups where lower(name) = lower(?)', [name]);

  it('creates an open group by default with the creator as its owner and only member', async () => {
    const owner = await registerUser(app());
    const name = uniqueGroupName();
    const group = await createGroup(owner, { name, description: 'about' });
    expect(group).toEqual({
      id: expect.any(String),
      name,
      description: 'about',
      owner_id: owner.user.id,
      join_policy: 'open',
      member_count: 1,
      created_at: expect.any(String),
    });
    expect((await expectStatus(200, 'GET', `/api/groups/${group.id}`, owner)).json()).toEqual(group);
    expect((await expectStatus(200, 'GET', `/api/groups/${group.id}/members`, owner)).json()).toEqual({
      items: [
        { user_id: owner.user.id, username: owner.user.username, role: 'owner', joined_at: group.created_at },
      ],
      next_cursor: null,
    });
  });

  it.each([
    ['a name of 2 characters', { name: 'ab' }],
    ['a name of 65 characters', { name: 'x'.repeat(65) }],
    ['a name with surrounding spaces', { name: ' spaced name ' }],
    ['a name with a NUL', { name: 'nul\u0000name' }],
    ['a description of 1001 characters', { description: 'd'.repeat(1001) }],
    ['an unknown join policy', { join_policy: 'invite' }],
    ['an unknown field', { owner_id: 'me' }],
  ])('refuses %s with 422 and creates nothing', async (_, body) => {
    const owner = await registerUser(app());
    const name = uniqueGroupName();
    const response = await call('POST', '/api/groups', owner, { name, ...body });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().code).toBe('VALIDATION_FAILED');
    expect(await queryRows(app().db, 'select id from groups where owner_id = ?', [owner.user.id])).toEqual(
      [],
    );
  });

  it('refuses a name another group has in another case with 409 CONFLICT', async () => {
    const [a, b] = [await registerUser(app()), await registerUser(app())];
    const name = uniqueGroupName('Knights');
    await createGroup(a, { name });
    const response = await call('POST', '/api/groups', b, { name: name.toUpperCase() });
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('CONFLICT');
    expect(await groupsNamed(name)).toHaveLength(1);
  });

  it('refuses a group past MAX_GROUPS_PER_USER with 409 QUOTA_EXCEEDED and its limit', async () => {
    const owner = await registerUser(app());
    for (let i = 0; i < 3; i += 1) await createGroup(owner);
    const name = uniqueGroupName();
    const response = await call('POST', '/api/groups', owner, { name });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect(await groupsNamed(name)).toEqual([]);
  });

  it('answers 404 for an unknown group and for an id that cannot name one', async () => {
    const user = await registerUser(app());
    for (const id of ['01900000-0000-7000-8000-000000000000', 'not-an-id']) {
      const response = await call('GET', `/api/groups/${id}`, user);
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe('NOT_FOUND');
    }
  });

  it('lets admins change the settings, refusing a taken name with 409 and changing nothing', async () => {
    const [owner, admin] = [await registerUser(app()), await registerUser(app())];
    const group = await createGroup(owner);
    const other = await createGroup(owner);
    await joined(admin, group.id);
    await setRole(owner, group.id, admin.user.id, 'admin');
    const changed = await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, admin, {
      description: 'new words',
      join_policy: 'closed',
    });
    expect(changed.json()).toMatchObject({
      name: group.name,
      description: 'new words',
      join_policy: 'closed',
    });
    const taken = await call('PATCH', `/api/groups/${group.id}`, admin, { name: other.name.toLowerCase() });
    expect(taken.statusCode).toBe(409);
    expect((await expectStatus(200, 'GET', `/api/groups/${group.id}`, owner)).json().name).toBe(group.name);
  });

  it('deletes the group with its roster, requests and chat', async () => {
    const [owner, member, asker] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    const group = await createGroup(owner);
    await joined(member, group.id);
    await expectStatus(201, 'POST', `/api/groups/${group.id}/messages`, member, { body: 'hello' });
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'closed' });
    await expectStatus(202, 'POST', `/api/groups/${group.id}/members`, asker);
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}`, owner);
    expect(await expectStatus(404, 'GET', `/api/groups/${group.id}`, owner)).toBeTruthy();
    for (const table of ['group_members', 'group_join_requests', 'messages'])
      expect(await queryRows(app().db, `select 1 from ${table} where group_id = ?`, [group.id])).toEqual([]);
  });

  describe('search', () => {
    it('finds groups by name prefix and by word prefixes regardless of case, in name order', async () => {
      const owner = await registerUser(app());
      const tag = uniqueGroupName('').trim();
      const names = [`Dragon Riders ${tag}`, `dragon slayers ${tag}`, `The Red Dragons ${tag}`];
      for (const name of names) await createGroup(owner, { name });
      const search = async (q: string) =>
        (await expectStatus(200, 'GET', `/api/groups?q=${encodeURIComponent(q)}`, owner))
          .json()
          .items.map((g: { name: string }) => g.name);
      expect(await search(`DRAGON ${tag}`)).toEqual(names);
      expect(await search(`dragon s ${tag}`)).toEqual([names[1]]);
      expect(await search(`red ${tag}`)).toEqual([names[2]]);
      expect(await search(`the red dra`)).toContain(names[2]);
      expect(await search(`riders% ${tag}`)).toEqual([names[0]]);
    });

    it('treats LIKE wildcards in the query as plain characters', async () => {
      const owner = await registerUser(app());
      // The query's words (a, b) must find no word of the tag: a random hex word may start with either.
      const tag = `z${uniqueGroupName('').trim()}`;
      await createGroup(owner, { name: `a%b ${tag}` });
      await createGroup(owner, { name: `axb ${tag}` });
      const found = (
        await expectStatus(200, 'GET', `/api/groups?q=${encodeURIComponent('a%b')}`, owner)
      ).json();
      const names = found.items.map((g: { name: string }) => g.name);
      expect(names).toContain(`a%b ${tag}`);
      expect(names).not.toContain(`axb ${tag}`);
    });

    it('pages through every match once with the cursor', async () => {
      const owner = await registerUser(app());
      const tag = uniqueGroupName('Paged').replace(' ', '');
      const names = ['a', 'b', 'c', 'd', 'e'].map((letter) => `${tag} ${letter}`);
      // Each by its own owner: MAX_GROUPS_PER_USER is 3 here.
      for (const name of [...names].reverse()) await createGroup(await registerUser(app()), { name });
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `/api/groups?q=${tag}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const page: { items: { name: string }[]; next_cursor: string | null } = (
          await expectStatus(200, 'GET', query, owner)
        ).json();
        seen.push(...page.items.map((g) => g.name));
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen).toEqual(names);
    });

    it.each([
      ['a key that is not text', encodeCursor([42])],
      ['a text with a NUL', encodeCursor(['a\u0000'])],
      ['two fields', encodeCursor(['a', 'b'])],
    ])('refuses a forged cursor (%s) with 422', async (_, cursor) => {
      const user = await registerUser(app());
      const response = await call('GET', `/api/groups?cursor=${cursor}`, user);
      expect(response.statusCode).toBe(422);
    });
  });

  describe('my groups and the roster', () => {
    it("lists the caller's groups with their role, most recently joined first", async () => {
      const [owner, me] = [await registerUser(app()), await registerUser(app())];
      const first = await createGroup(owner);
      const second = await createGroup(me);
      await joined(me, first.id);
      const mine = (await expectStatus(200, 'GET', '/api/users/me/groups', me)).json();
      expect(mine.items.map((m: { group: { id: string }; role: string }) => [m.group.id, m.role])).toEqual([
        [first.id, 'member'],
        [second.id, 'owner'],
      ]);
      expect(mine.items[0].group.member_count).toBe(2);
    });

    it('orders the roster owner, admins, members, each by join time, and filters by role', async () => {
      const owner = await registerUser(app());
      const group = await createGroup(owner);
      const others = [];
      for (let i = 0; i < 4; i += 1) {
        const user = await registerUser(app());
        await joined(user, group.id);
        others.push(user);
      }
      const [m1, a1, m2, a2] = others as [typeof owner, typeof owner, typeof owner, typeof owner];
      await setRole(owner, group.id, a2.user.id, 'admin');
      await setRole(owner, group.id, a1.user.id, 'admin');
      const ids = async (query: string) => {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const url: string = `/api/groups/${group.id}/members?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`;
          const page: { items: { user_id: string }[]; next_cursor: string | null } = (
            await expectStatus(200, 'GET', url, owner)
          ).json();
          seen.push(...page.items.map((m) => m.user_id));
          cursor = page.next_cursor;
        } while (cursor);
        return seen;
      };
      expect(await ids('')).toEqual([owner, a1, a2, m1, m2].map((u) => u.user.id));
      expect(await ids('&role=admin')).toEqual([a1, a2].map((u) => u.user.id));
      expect(await ids('&role=member')).toEqual([m1, m2].map((u) => u.user.id));
    });

    it.each([
      [
        'an unknown role',
        encodeCursor(['superadmin', '2026-01-01T00:00:00.000000Z', '01900000-0000-7000-8000-000000000000']),
      ],
      [
        'an impossible time',
        encodeCursor(['member', '2026-13-45T99:99:99.000000Z', '01900000-0000-7000-8000-000000000000']),
      ],
      ['an id that is no uuid', encodeCursor(['member', '2026-01-01T00:00:00.000000Z', 'x'])],
    ])('refuses a forged roster cursor (%s) with 422', async (_, cursor) => {
      const owner = await registerUser(app());
      const group = await createGroup(owner);
      const response = await call('GET', `/api/groups/${group.id}/members?cursor=${cursor}`, owner);
      expect(response.statusCode).toBe(422);
      expect(response.json().code).toBe('VALIDATION_FAILED');
    });

    it('answers 404 for the roster of an unknown group and an empty page for an empty role', async () => {
      const owner = await registerUser(app());
      const group = await createGroup(owner);
      await expectStatus(404, 'GET', '/api/groups/01900000-0000-7000-8000-000000000000/members', owner);
      expect(
        (await expectStatus(200, 'GET', `/api/groups/${group.id}/members?role=admin`, owner)).json(),
      ).toEqual({
        items: [],
        next_cursor: null,
      });
    });
  });
});
