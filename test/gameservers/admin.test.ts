import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { newId } from '../../src/platform/ids.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, recordingCommand } from './gameservers.js';

/** The administration list of game servers (docs/gameservers.md, "Administration"). */
describe('game servers administration', () => {
  const { command } = recordingCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_READY_TIMEOUT_MS: 20_000 });
  const { call, expectStatus, spawn, settled } = gameServerCalls(app);
  const list = (user: TokenResponse, query = '') => call('GET', `/api/admin/servers${query}`, user);
  const ids = async (admin: TokenResponse, query: string) =>
    (await expectStatus(200, 'GET', `/api/admin/servers?${query}`, admin))
      .json()
      .items.map((server: { server_id: string }) => server.server_id);

  it('lists every server to admins newest first in keyset pages, ended ones included, filtered by status and world', async () => {
    const owner = await registerUser(app());
    const admin = await registerWithRole(app(), 'admin');
    const { worldId } = await createWorld(app(), owner.access_token);
    const other = await createWorld(app(), owner.access_token);
    const ready = await spawn(owner, worldId);
    await settled(owner, ready.server_id);
    const stopped = await spawn(owner, worldId);
    await expectStatus(204, 'DELETE', `/api/servers/${stopped.server_id}`, owner);
    const elsewhere = await spawn(admin, other.worldId);

    const first = (
      await expectStatus(200, 'GET', `/api/admin/servers?world_id=${worldId}&limit=1`, admin)
    ).json();
    expect(first.items).toEqual([
      expect.objectContaining({
        server_id: stopped.server_id,
        world_id: worldId,
        world_owner_id: owner.user.id,
        requested_by: owner.user.id,
        status: 'stopped',
        backend: 'local',
        error: null,
        ended_at: expect.any(String),
      }),
    ]);
    const second = (
      await expectStatus(
        200,
        'GET',
        `/api/admin/servers?world_id=${worldId}&limit=1&cursor=${first.next_cursor}`,
        admin,
      )
    ).json();
    expect(second.items).toEqual([
      expect.objectContaining({
        server_id: ready.server_id,
        status: 'ready',
        address: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
        ready_at: expect.any(String),
      }),
    ]);
    expect(second.next_cursor).toBeNull();

    expect(await ids(admin, `world_id=${worldId}&status=stopped`)).toEqual([stopped.server_id]);
    expect(await ids(admin, `world_id=${worldId}&status=ready`)).toEqual([ready.server_id]);
    expect(await ids(admin, `world_id=${worldId}&status=running`)).toEqual([ready.server_id]);
    expect(await ids(admin, `world_id=${worldId}&status=failed`)).toEqual([]);
    const everywhere = await ids(admin, 'status=running&limit=100');
    expect(everywhere).toEqual(expect.arrayContaining([ready.server_id, elsewhere.server_id]));
    expect(everywhere).not.toContain(stopped.server_id);
    expect(await ids(admin, `world_id=${other.worldId}`)).toEqual([elsewhere.server_id]);
    const [byAdmin] = (
      await expectStatus(200, 'GET', `/api/admin/servers?world_id=${other.worldId}`, admin)
    ).json().items;
    expect(byAdmin).toMatchObject({ requested_by: admin.user.id, world_owner_id: owner.user.id });

    for (const server of [ready, elsewhere])
      await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, admin);
  });

  it('refuses the list to moderators and users with 403 FORBIDDEN', async () => {
    for (const caller of [await registerWithRole(app(), 'moderator'), await registerUser(app())]) {
      const refused = await list(caller);
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'FORBIDDEN']);
    }
  });

  it('answers an empty page for a world with no servers, or none at all', async () => {
    const admin = await registerWithRole(app(), 'admin');
    expect((await expectStatus(200, 'GET', `/api/admin/servers?world_id=${newId()}`, admin)).json()).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it.each([
    ['a world_id that is no id', '?world_id=somewhere', 'world_id'],
    ['an unknown status', '?status=crashed', 'status'],
    ['a limit of 0', '?limit=0', 'limit'],
    ['a cursor it never gave', '?cursor=bm90LWEta2V5', 'cursor'],
    [
      'a cursor of another list',
      `?cursor=${Buffer.from(JSON.stringify([newId()])).toString('base64url')}`,
      'cursor',
    ],
    ['an unknown filter', '?node=a', ''],
  ])('answers 422 VALIDATION_FAILED to %s', async (_what, query, path) => {
    const refused = await list(await registerWithRole(app(), 'admin'), query);
    expect([refused.statusCode, refused.json().code]).toEqual([422, 'VALIDATION_FAILED']);
    if (path) expect(JSON.stringify(refused.json().errors)).toContain(path);
  });

  it('writes nothing for a read', async () => {
    const count = async () =>
      (await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from audit_log'))[0]?.n;
    const before = await count();
    await list(await registerUser(app()));
    await list(await registerWithRole(app(), 'admin'), '?status=running');
    // Registering with a role records the grant; the reads add nothing.
    expect(await count()).toBe((before ?? 0) + 1);
  });
});
