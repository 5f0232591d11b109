import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { newId } from '../../src/platform/ids.js';
import { auditEntriesOf } from '../audit/audit.js';
import { uniqueGroupName } from '../groups/groups.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld, worldWithHistory as historyWorld } from '../helpers/worlds.js';

/** The administration of worlds (docs/worlds.md, "Administration"). */
describe('worlds administration', () => {
  const app = useTestApp();
  const { call, expectStatus } = callsAs(app);
  const list = (user: TokenResponse, query = '') => call('GET', `/api/admin/worlds${query}`, user);
  const visibilityOf = async (worldId: string) =>
    (
      await queryRows<{ v: string }>(app().db, 'select visibility::text as v from worlds where id = ?', [
        worldId,
      ])
    )[0]?.v;

  const worldWithHistory = (visibility = 'private') => historyWorld(app(), { visibility });

  it('lists every world to moderators and admins, private ones included, newest first in keyset pages', async () => {
    const owner = await registerUser(app());
    const name = uniqueGroupName('Admin list');
    const ids: string[] = [];
    for (const visibility of ['private', 'unlisted', 'public']) {
      ids.push(
        (await createWorld(app(), owner.access_token, { name: `${name} ${visibility}`, visibility })).worldId,
      );
    }
    for (const staff of [
      await registerWithRole(app(), 'moderator'),
      await registerWithRole(app(), 'admin'),
    ]) {
      const first = (
        await expectStatus(200, 'GET', `/api/admin/worlds?owner_id=${owner.user.id}&limit=2`, staff)
      ).json();
      expect(first.items.map((w: { id: string }) => w.id)).toEqual([ids[2], ids[1]]);
      expect(first.items[1]).toMatchObject({
        owner_id: owner.user.id,
        owner_username: owner.user.username,
        name: `${name} unlisted`,
        visibility: 'unlisted',
        content_revision: 0,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const second = (
        await expectStatus(
          200,
          'GET',
          `/api/admin/worlds?owner_id=${owner.user.id}&limit=2&cursor=${first.next_cursor}`,
          staff,
        )
      ).json();
      expect(second.items.map((w: { id: string; visibility: string }) => [w.id, w.visibility])).toEqual([
        [ids[0], 'private'],
      ]);
      expect(second.next_cursor).toBeNull();
    }
  });

  it('filters the list by a name prefix or words of the name, and by visibility', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const owner = await registerUser(app());
    const word = `zq${newId().slice(-10).replace(/-/g, '')}`;
    const privateOne = (await createWorld(app(), owner.access_token, { name: `${word} castle` })).worldId;
    const publicOne = (
      await createWorld(app(), owner.access_token, { name: `Grand ${word}`, visibility: 'public' })
    ).worldId;
    const ids = async (query: string) =>
      (await expectStatus(200, 'GET', `/api/admin/worlds?${query}`, admin))
        .json()
        .items.map((w: { id: string }) => w.id);
    expect(await ids(`query=${word}`)).toEqual([publicOne, privateOne]);
    expect(await ids(`query=${word.toUpperCase()}%20CAS`)).toEqual([privateOne]);
    expect(await ids(`query=${word}&visibility=private`)).toEqual([privateOne]);
    expect(await ids(`query=${word}&visibility=unlisted`)).toEqual([]);
    expect(await ids(`query=${encodeURIComponent('%')}&owner_id=${owner.user.id}`)).toEqual([]);
    // A blank query is no filter: the console sends its empty search box as it is.
    expect(await ids(`query=%20&owner_id=${owner.user.id}`)).toEqual([publicOne, privateOne]);
  });

  it('finds one world, private ones included, when the query is its id in any case', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { name: 'Hidden keep' });
    await createWorld(app(), owner.access_token, { name: worldId });
    for (const staff of [
      await registerWithRole(app(), 'moderator'),
      await registerWithRole(app(), 'admin'),
    ]) {
      for (const query of [worldId, worldId.toUpperCase(), `%20${worldId}%20`]) {
        const found = (await expectStatus(200, 'GET', `/api/admin/worlds?query=${query}`, staff)).json();
        expect(found).toEqual({
          items: [
            {
              id: worldId,
              owner_id: owner.user.id,
              owner_username: owner.user.username,
              name: 'Hidden keep',
              description: expect.any(String),
              visibility: 'private',
              content_revision: 0,
              created_at: expect.any(String),
              updated_at: expect.any(String),
            },
          ],
          next_cursor: null,
        });
      }
      const ids = async (query: string) =>
        (await expectStatus(200, 'GET', `/api/admin/worlds?${query}`, staff))
          .json()
          .items.map((w: { id: string }) => w.id);
      // The other filters still narrow it; an id no world has finds nothing.
      expect(await ids(`query=${worldId}&visibility=public`)).toEqual([]);
      expect(await ids(`query=${worldId}&owner_id=${newId()}`)).toEqual([]);
      expect(await ids(`query=${newId()}`)).toEqual([]);
    }
  });

  it('refuses a lookup by id to users without a staff role with 403 FORBIDDEN, even the owner', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    for (const caller of [owner, await registerUser(app())]) {
      const refused = await list(caller, `?query=${worldId}`);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
  });

  it.each([
    ['an owner_id that is no id', '?owner_id=someone', 'owner_id'],
    ['an unknown visibility', '?visibility=hidden', 'visibility'],
    ['a limit over 100', '?limit=101', 'limit'],
    ['a query over 100 characters', `?query=${'x'.repeat(101)}`, 'query'],
    ['a cursor it never gave', '?cursor=bm90LWEta2V5', 'cursor'],
    ['an unknown filter', '?name=x', ''],
  ])('answers 422 VALIDATION_FAILED to %s', async (_what, query, path) => {
    const refused = await list(await registerWithRole(app(), 'moderator'), query);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    if (path) expect(JSON.stringify(refused.json().errors)).toContain(path);
  });

  it('refuses the list to users without a staff role with 403 FORBIDDEN', async () => {
    const refused = await list(await registerUser(app()));
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
  });

  it("lets an admin change any world's visibility, audited with the visibility before and after", async () => {
    const owner = await registerUser(app());
    const admin = await registerWithRole(app(), 'admin');
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const changed = await expectStatus(200, 'PATCH', `/api/admin/worlds/${worldId}`, admin, {
      visibility: 'private',
    });
    expect(changed.json()).toMatchObject({ id: worldId, owner_id: owner.user.id, visibility: 'private' });
    expect(await visibilityOf(worldId)).toBe('private');
    expect(await auditEntriesOf(app().db, worldId)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'worlds.visibility',
        target_type: 'world',
        target_id: worldId,
        before: { visibility: 'public', owner_id: owner.user.id },
        after: { visibility: 'private', owner_id: owner.user.id },
      },
    ]);
    // The owner's own reads follow: the world is private to everyone else now.
    const stranger = await registerUser(app());
    expect((await call('GET', `/api/worlds/${worldId}`, stranger)).statusCode).toBe(404);
  });

  it('refuses a visibility change to moderators and users with 403 FORBIDDEN, writing nothing', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    for (const caller of [await registerWithRole(app(), 'moderator'), await registerUser(app()), owner]) {
      const refused = await call('PATCH', `/api/admin/worlds/${worldId}`, caller, { visibility: 'private' });
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await visibilityOf(worldId)).toBe('public');
    expect(await auditEntriesOf(app().db, worldId)).toEqual([]);
  });

  it('answers 404 for a world that does not exist and 422 for a bad visibility, writing nothing', async () => {
    const admin = await registerWithRole(app(), 'admin');
    for (const id of [newId(), 'not-an-id']) {
      const missing = await call('PATCH', `/api/admin/worlds/${id}`, admin, { visibility: 'public' });
      expect([missing.statusCode, missing.json().code]).toEqual([404, 'NOT_FOUND']);
      expect(await auditEntriesOf(app().db, id)).toEqual([]);
    }
    const { worldId } = await createWorld(app(), (await registerUser(app())).access_token);
    for (const body of [{ visibility: 'hidden' }, {}, { visibility: 'public', name: 'x' }]) {
      const refused = await call('PATCH', `/api/admin/worlds/${worldId}`, admin, body);
      expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    }
    expect(await visibilityOf(worldId)).toBe('private');
    expect(await auditEntriesOf(app().db, worldId)).toEqual([]);
  });

  it("lets moderators and admins read a private world's revision history, and other users not", async () => {
    const { worldId, first, second } = await worldWithHistory();
    for (const staff of [
      await registerWithRole(app(), 'moderator'),
      await registerWithRole(app(), 'admin'),
    ]) {
      const history = (await expectStatus(200, 'GET', `/api/worlds/${worldId}/revisions`, staff)).json();
      expect(history.items.map((r: { revision: number }) => r.revision)).toEqual([second, first]);
    }
    const refused = await call('GET', `/api/worlds/${worldId}/revisions`, await registerUser(app()));
    expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
  });

  it("lets an admin roll back someone else's world, audited with the content revision before and after", async () => {
    const { owner, worldId, first, second } = await worldWithHistory();
    const admin = await registerWithRole(app(), 'admin');
    const rolled = (
      await expectStatus(200, 'POST', `/api/worlds/${worldId}/rollback`, admin, { revision: first })
    ).json();
    expect(rolled).toEqual({ content_revision: expect.any(Number), restored: 1 });
    expect(rolled.content_revision).toBeGreaterThan(second);
    expect(await auditEntriesOf(app().db, worldId)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'worlds.rollback',
        target_type: 'world',
        target_id: worldId,
        before: { content_revision: second, owner_id: owner.user.id },
        after: { content_revision: rolled.content_revision, revision: first, restored: 1 },
      },
    ]);
  });

  it("records no entry for an owner's own rollback", async () => {
    const { owner, worldId, first } = await worldWithHistory();
    await expectStatus(200, 'POST', `/api/worlds/${worldId}/rollback`, owner, { revision: first });
    expect(await auditEntriesOf(app().db, worldId)).toEqual([]);
  });

  it("refuses a moderator's rollback of someone else's world with 403 FORBIDDEN, writing nothing", async () => {
    const { worldId, second } = await worldWithHistory('public');
    const revisions = async () =>
      (await queryRows(app().db, 'select id from chunk_revisions where world_id = ?', [worldId])).length;
    const before = await revisions();
    const refused = await call(
      'POST',
      `/api/worlds/${worldId}/rollback`,
      await registerWithRole(app(), 'moderator'),
      {
        revision: 0,
      },
    );
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    expect(await revisions()).toBe(before);
    expect(
      (
        await queryRows<{ r: string }>(
          app().db,
          'select content_revision::text as r from worlds where id = ?',
          [worldId],
        )
      )[0]?.r,
    ).toBe(String(second));
    expect(await auditEntriesOf(app().db, worldId)).toEqual([]);
  });

  it('answers 404 to an admin rolling back a world that does not exist', async () => {
    const refused = await call(
      'POST',
      `/api/worlds/${newId()}/rollback`,
      await registerWithRole(app(), 'admin'),
      {
        revision: 0,
      },
    );
    expect([refused.statusCode, refused.json().code]).toEqual([404, 'NOT_FOUND']);
  });
});
