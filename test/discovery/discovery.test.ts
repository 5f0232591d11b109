import { describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/platform/cursor.js';
import { transaction } from '../../src/platform/data-access.js';
import { newId } from '../../src/platform/ids.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { discoveryCalls, uniqueTag } from './discovery.js';

describe('discovery metadata', () => {
  const app = useTestApp({ CREATE_RATE_LIMIT_COUNT: 100_000 });
  const { call, expectStatus } = discoveryCalls(app);
  const discoveryUrl = (worldId: string) => `/api/worlds/${worldId}/discovery`;

  it("defaults to the world's name and description, follows them until set, and keeps omitted fields", async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, {
      name: 'Sky Port',
      visibility: 'public',
    });
    expect((await expectStatus(200, 'GET', discoveryUrl(worldId), owner)).json()).toEqual({
      world_id: worldId,
      owner_id: owner.user.id,
      title: 'Sky Port',
      description: '',
      tags: [],
      category: 'other',
      thumbnail_asset_id: null,
      visit_count: 0,
      unique_visitors: 0,
      last_visited_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    await expectStatus(200, 'PATCH', `/api/worlds/${worldId}`, owner, {
      name: 'Sky Harbour',
      description: 'Boats',
    });
    expect((await expectStatus(200, 'GET', discoveryUrl(worldId), owner)).json()).toMatchObject({
      title: 'Sky Harbour',
      description: 'Boats',
    });
    const set = await expectStatus(200, 'PUT', discoveryUrl(worldId), owner, {
      title: 'The Harbour',
      tags: ['Boats', 'boats', 'sea-life'],
      category: 'adventure',
      thumbnail_asset_id: 'asset-1',
    });
    expect(set.json()).toMatchObject({
      title: 'The Harbour',
      description: 'Boats',
      tags: ['boats', 'sea-life'],
      category: 'adventure',
      thumbnail_asset_id: 'asset-1',
    });
    const kept = await expectStatus(200, 'PUT', discoveryUrl(worldId), owner, { thumbnail_asset_id: null });
    expect(kept.json()).toMatchObject({
      title: 'The Harbour',
      tags: ['boats', 'sea-life'],
      thumbnail_asset_id: null,
    });
    await expectStatus(200, 'PATCH', `/api/worlds/${worldId}`, owner, { name: 'Renamed' });
    expect((await expectStatus(200, 'GET', discoveryUrl(worldId), owner)).json().title).toBe('The Harbour');
  });

  it.each([
    ['a title of 101 characters', { title: 'x'.repeat(101) }],
    ['an empty title', { title: '' }],
    ['a tag with a space', { tags: ['two words'] }],
    ['a tag of 33 characters', { tags: ['a'.repeat(33)] }],
    ['11 tags', { tags: Array.from({ length: 11 }, (_, i) => `tag${i}`) }],
    ['an unknown category', { category: 'sports' }],
    ['a description of 2001 characters', { description: 'd'.repeat(2001) }],
    ['a thumbnail id of 65 characters', { thumbnail_asset_id: 'a'.repeat(65) }],
  ])('refuses %s with 422 and changes nothing', async (_, body) => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const before = (await expectStatus(200, 'GET', discoveryUrl(worldId), owner)).json();
    const response = await call('PUT', discoveryUrl(worldId), owner, body);
    expect([response.statusCode, response.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    expect((await expectStatus(200, 'GET', discoveryUrl(worldId), owner)).json()).toEqual(before);
  });

  it('lets another reader read but not write (403), and answers 404 to a non-reader', async () => {
    const [owner, reader] = [await registerUser(app()), await registerUser(app())];
    const { worldId: open } = await createWorld(app(), owner.access_token, { visibility: 'unlisted' });
    const { worldId: hidden } = await createWorld(app(), owner.access_token, { visibility: 'private' });
    await expectStatus(200, 'GET', discoveryUrl(open), reader);
    const refused = await call('PUT', discoveryUrl(open), reader, { title: 'Mine now' });
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    expect((await expectStatus(200, 'GET', discoveryUrl(open), owner)).json().title).toBe('World');
    for (const method of ['GET', 'PUT'] as const) {
      const answer = await call(
        method,
        discoveryUrl(hidden),
        reader,
        method === 'PUT' ? { title: 'x' } : undefined,
      );
      expect(answer.statusCode).toBe(404);
    }
    await expectStatus(404, 'GET', discoveryUrl(newId()), reader);
  });
});

describe('discovery search', () => {
  const app = useTestApp({ CREATE_RATE_LIMIT_COUNT: 100_000, MAX_WORLDS_PER_USER: 10_000 });
  const { call, expectStatus, taggedWorld, visits, refresh, searchAll } = discoveryCalls(app);

  it('lists public worlds only: private and unlisted never, a deleted world at once no more', async () => {
    const owner = await registerUser(app());
    const tag = uniqueTag();
    const shown = await taggedWorld(owner, [tag]);
    await taggedWorld(owner, [tag], { visibility: 'unlisted' });
    await taggedWorld(owner, [tag], { visibility: 'private' });
    const gone = await taggedWorld(owner, [tag]);
    await refresh();
    for (const sort of ['new', 'popular', 'trending'])
      expect((await searchAll(owner, `tag=${tag}&sort=${sort}`)).sort()).toEqual([shown, gone].sort());
    await expectStatus(204, 'DELETE', `/api/worlds/${gone}`, owner);
    for (const sort of ['new', 'popular', 'trending'])
      expect(await searchAll(owner, `tag=${tag}&sort=${sort}`)).toEqual([shown]);
    await expectStatus(200, 'PATCH', `/api/worlds/${shown}`, owner, { visibility: 'private' });
    expect(await searchAll(owner, `tag=${tag}&sort=new`)).toEqual([]);
  });

  it('finds worlds by words of their title, description and tags, in non-Latin scripts too, and by all tags given', async () => {
    const owner = await registerUser(app());
    const tag = uniqueTag();
    const moscow = await taggedWorld(owner, [tag, 'city'], { name: 'Привет Москва' });
    const athens = await taggedWorld(owner, [tag, 'city', 'ruins'], { name: 'Καλημέρα Αθήνα' });
    const forest = await taggedWorld(owner, [tag, 'nature'], { name: 'Quiet forest' });
    const search = (query: string) => searchAll(owner, `tag=${tag}&sort=new&${query}`);
    expect(await search(`q=${encodeURIComponent('москва')}`)).toEqual([moscow]);
    expect(await search(`q=${encodeURIComponent('αθήνα')}`)).toEqual([athens]);
    expect(await search('q=ruins')).toEqual([athens]);
    expect(await search(`q=${encodeURIComponent('"quiet forest"')}`)).toEqual([forest]);
    expect(await search(`q=${encodeURIComponent('city -ruins')}`)).toEqual([moscow]);
    expect(await search('tag=city')).toEqual([athens, moscow]);
    expect(await search('tag=city&tag=ruins')).toEqual([athens]);
    expect(await search('tag=CITY&tag=nature')).toEqual([]);
  });

  it('filters by category', async () => {
    const owner = await registerUser(app());
    const tag = uniqueTag();
    const scary = await taggedWorld(owner, [tag]);
    await taggedWorld(owner, [tag]);
    await expectStatus(200, 'PUT', `/api/worlds/${scary}/discovery`, owner, { category: 'horror' });
    expect(await searchAll(owner, `tag=${tag}&sort=new&category=horror`)).toEqual([scary]);
  });

  it('sorts new by creation, popular by visits of the last 168 h, trending by growth, ties by new', async () => {
    const owner = await registerUser(app());
    const tag = uniqueTag();
    const [a, b, c, d] = [
      await taggedWorld(owner, [tag]),
      await taggedWorld(owner, [tag]),
      await taggedWorld(owner, [tag]),
      await taggedWorld(owner, [tag]),
    ];
    await visits(a, 3); // popular 3, trending +3
    await visits(b, 1);
    await visits(b, 4, 30); // popular 5, trending 1 - 4 = -3
    await visits(c, 2, 200); // outside both windows: 0 and 0
    await visits(d, 1); // popular 1, trending +1
    await refresh();
    expect(await searchAll(owner, `tag=${tag}&sort=new`)).toEqual([d, c, b, a]);
    expect(await searchAll(owner, `tag=${tag}&sort=popular`)).toEqual([b, a, d, c]);
    expect(await searchAll(owner, `tag=${tag}&sort=trending`)).toEqual([a, d, c, b]);
    // The default sort is popular.
    expect(await searchAll(owner, `tag=${tag}`)).toEqual([b, a, d, c]);
    const counted = (await expectStatus(200, 'GET', `/api/worlds/${b}/discovery`, owner)).json();
    expect(counted).toMatchObject({
      visit_count: 5,
      unique_visitors: 5,
      last_visited_at: expect.any(String),
    });
  });

  it('filters popular and trending by the tags and category of the snapshot they rank, new by the current ones', async () => {
    const owner = await registerUser(app());
    const [before, after] = [uniqueTag(), uniqueTag()];
    const world = await taggedWorld(owner, [before]);
    await refresh();
    await expectStatus(200, 'PUT', `/api/worlds/${world}/discovery`, owner, {
      tags: [after],
      category: 'horror',
    });
    for (const sort of ['popular', 'trending']) {
      expect(await searchAll(owner, `tag=${before}&sort=${sort}`)).toEqual([world]);
      expect(await searchAll(owner, `tag=${after}&sort=${sort}`)).toEqual([]);
      expect(await searchAll(owner, `tag=${before}&sort=${sort}&category=horror`)).toEqual([]);
    }
    expect(await searchAll(owner, `tag=${after}&sort=new&category=horror`)).toEqual([world]);
    await refresh();
    for (const sort of ['popular', 'trending']) {
      expect(await searchAll(owner, `tag=${before}&sort=${sort}`)).toEqual([]);
      expect(await searchAll(owner, `tag=${after}&sort=${sort}&category=horror`)).toEqual([world]);
    }
  });

  it('pages through one snapshot without duplicates or gaps while visits arrive and newer snapshots are taken', async () => {
    const owner = await registerUser(app());
    const tag = uniqueTag();
    const worlds: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      worlds.push(await taggedWorld(owner, [tag]));
      await visits(worlds[i] as string, i + 1);
    }
    await refresh();
    const expected = [...worlds].reverse();
    // Between pages, the least visited world becomes the most visited in a new snapshot.
    let turn = 0;
    const seen = await searchAll(owner, `tag=${tag}&sort=popular`, 2, async () => {
      await visits(worlds[turn] as string, 10);
      turn += 1;
      await refresh();
    });
    expect(seen).toEqual(expected);
    // A first page reads the newest snapshot: the first two worlds have 11 and 12 visits now.
    const [w0, w1, w2, w3, w4] = worlds;
    expect(await searchAll(owner, `tag=${tag}&sort=popular`, 10)).toEqual([w1, w0, w4, w3, w2]);
  });

  it('answers 409 CONFLICT for a cursor of a snapshot no longer kept', async () => {
    const user = await registerUser(app());
    const cursor = encodeCursor(['2001-01-01T00:00:00.000000Z', 5, '2001-01-01T00:00:00.000000Z', newId()]);
    const response = await call('GET', `/api/discovery/worlds?sort=popular&cursor=${cursor}`, user);
    expect([response.statusCode, response.json().code]).toEqual([409, 'CONFLICT']);
  });

  it.each([
    ['popular', encodeCursor(['2026-13-45T99:99:99.000000Z', 1, '2026-01-01T00:00:00.000000Z', newId()])],
    ['popular', encodeCursor(['2026-01-01T00:00:00.000000Z', 1.5, '2026-01-01T00:00:00.000000Z', newId()])],
    [
      'trending',
      encodeCursor(['2026-01-01T00:00:00.000000Z', 2 ** 60, '2026-01-01T00:00:00.000000Z', newId()]),
    ],
    ['new', encodeCursor(['2026-01-01T00:00:00.000000Z', 'x'])],
    ['new', encodeCursor([1, 2, 3, 4])],
  ])('refuses a forged %s cursor with 422', async (sort, cursor) => {
    const user = await registerUser(app());
    const response = await call('GET', `/api/discovery/worlds?sort=${sort}&cursor=${cursor}`, user);
    expect([response.statusCode, response.json().code]).toEqual([422, 'VALIDATION_FAILED']);
  });

  it('counts concurrent visits of one world exactly, with two folds running at once', async () => {
    const owner = await registerUser(app());
    const world = await taggedWorld(owner, [uniqueTag()]);
    const users = await Promise.all(Array.from({ length: 30 }, () => registerUser(app())));
    const { discovery } = app().modules;
    // A stopped server of the world: what a visit names (its row, as the game servers module keeps it).
    const serverId = newId();
    await queryRows(
      app().db,
      `insert into game_servers (id, world_id, backend, status, max_players, created_at, ready_deadline, ended_at)
       values (?, ?, 'local', 'stopped', 8, now(), now(), now())`,
      [serverId, world],
    );
    // 30 visitors join at once, each twice, while two nodes fold.
    await Promise.all([
      ...users.flatMap((user) =>
        [0, 1].map(() =>
          transaction(app().db.data, (tx) =>
            discovery.recordVisit(tx, { worldId: world, userId: user.user.id, serverId, at: new Date() }),
          ),
        ),
      ),
      discovery.foldVisits(),
      discovery.foldVisits(),
    ]);
    await Promise.all([discovery.foldVisits(), discovery.foldVisits()]);
    await discovery.foldVisits();
    const [row] = await queryRows(
      app().db,
      'select visit_count, unique_visitors from world_discovery where world_id = ?',
      [world],
    );
    expect([Number(row?.visit_count), Number(row?.unique_visitors)]).toEqual([60, 30]);
  });
});

describe('the periodic discovery passes', () => {
  const app = useTestApp({ DISCOVERY_FOLD_INTERVAL_SECONDS: 1 });
  const { expectStatus, taggedWorld, visits } = discoveryCalls(app);

  it('fold visits into the counters every DISCOVERY_FOLD_INTERVAL_SECONDS without being asked', async () => {
    const owner = await registerUser(app());
    const worldId = await taggedWorld(owner, [uniqueTag()]);
    await visits(worldId, 2);
    const counters = async () => {
      const { visit_count, unique_visitors } = (
        await expectStatus(200, 'GET', `/api/worlds/${worldId}/discovery`, owner)
      ).json();
      return [visit_count, unique_visitors];
    };
    await expect.poll(counters, { timeout: 15_000, interval: 200 }).toEqual([2, 2]);
  });
});
