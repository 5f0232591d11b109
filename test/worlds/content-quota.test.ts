import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { buildCheckedApp, testConfig, useTestApp } from '../helpers/app.js';
import { createRoom, createWorld } from '../helpers/worlds.js';
import { batch, chunkOfSize, contentState } from './content-fixtures.js';

const LIMIT = 1000;

/** MAX_WORLD_CONTENT_BYTES: the payload bytes of a world's live chunks, kept in the world's row. */
describe('live content bytes per world', () => {
  const app = useTestApp({ MAX_WORLD_CONTENT_BYTES: LIMIT });

  async function setup() {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const token = owner.access_token;
    const chunkUrl = (room: string, x: number) => `/api/worlds/${worldId}/rooms/${room}/chunks/${x}/0/0`;
    const put = (x: number, size: number, precondition: Record<string, string>, room = mainRoomId) =>
      app().http.inject({
        method: 'PUT',
        url: chunkUrl(room, x),
        headers: { ...bearer(token), ...precondition, 'content-type': 'application/octet-stream' },
        payload: chunkOfSize(`c${x}`, size),
      });
    const remove = (x: number, precondition: Record<string, string>) =>
      app().http.inject({
        method: 'DELETE',
        url: chunkUrl(mainRoomId, x),
        headers: { ...bearer(token), ...precondition },
      });
    const state = () => contentState(app(), worldId);
    return { owner, token, worldId, room: mainRoomId, put, remove, state };
  }

  const refusedForQuota = (response: { statusCode: number; json(): unknown }) => {
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: LIMIT });
  };

  it('refuses a PUT that would go over the limit with 409 QUOTA_EXCEEDED and the limit, and writes nothing', async () => {
    const { put, state, token, worldId, room } = await setup();
    expect((await put(1, 600, { 'if-none-match': '*' })).statusCode).toBe(200);
    const before = await state();
    expect(before).toMatchObject({ stored: 600, recomputed: 600 });

    refusedForQuota(await put(2, 401, { 'if-none-match': '*' }));
    expect(await state()).toEqual(before);
    const missing = await app().http.inject({
      method: 'GET',
      url: `/api/worlds/${worldId}/rooms/${room}/chunks/2/0/0`,
      headers: bearer(token),
    });
    expect(missing.statusCode).toBe(404);
    expect((await put(2, 400, { 'if-none-match': '*' })).statusCode).toBe(200);
    expect(await state()).toMatchObject({ stored: LIMIT, recomputed: LIMIT });
  });

  it("counts a chunk's current payload only: overwriting it counts the difference, deleting it gives its bytes back", async () => {
    const { put, remove, state } = await setup();
    const first = (await put(1, 600, { 'if-none-match': '*' })).json().revision;
    const grown = await put(1, LIMIT, { 'if-match': `"${first}"` });
    expect(grown.statusCode).toBe(200);
    refusedForQuota(await put(2, 100, { 'if-none-match': '*' }));
    expect((await remove(1, { 'if-match': `"${grown.json().revision}"` })).statusCode).toBe(200);
    expect(await state()).toMatchObject({ stored: 0, recomputed: 0 });
    expect((await put(2, 100, { 'if-none-match': '*' })).statusCode).toBe(200);
    expect(await state()).toMatchObject({ stored: 100, recomputed: 100 });
  });

  it('weighs a batch as a whole: refused over the limit with nothing written, accepted when its deletes make room', async () => {
    const { put, state, token, worldId, room } = await setup();
    const revision = (await put(1, 600, { 'if-none-match': '*' })).json().content_revision;
    const before = await state();
    const over = await batch(app(), token, worldId, revision, [
      { room_id: room, x: 2, y: 0, z: 0, payload: chunkOfSize('a', 300) },
      { room_id: room, x: 3, y: 0, z: 0, payload: chunkOfSize('b', 300) },
    ]);
    refusedForQuota(over);
    expect(await state()).toEqual(before);

    const swapped = await batch(app(), token, worldId, revision, [
      { room_id: room, x: 1, y: 0, z: 0, delete: true },
      { room_id: room, x: 2, y: 0, z: 0, payload: chunkOfSize('a', 500) },
      { room_id: room, x: 3, y: 0, z: 0, payload: chunkOfSize('b', 500) },
    ]);
    expect(swapped.statusCode, swapped.body).toBe(200);
    expect(await state()).toMatchObject({ stored: LIMIT, recomputed: LIMIT });
  });

  it("gives a deleted room's bytes back to its world", async () => {
    const { put, state, token, worldId } = await setup();
    const hall = await createRoom(app(), token, worldId, 'hall');
    expect((await put(1, 900, { 'if-none-match': '*' }, hall)).statusCode).toBe(200);
    refusedForQuota(await put(1, 200, { 'if-none-match': '*' }));

    const deleted = await app().http.inject({
      method: 'DELETE',
      url: `/api/worlds/${worldId}/rooms/${hall}`,
      headers: bearer(token),
    });
    expect(deleted.statusCode).toBe(204);
    expect(await state()).toMatchObject({ stored: 0, recomputed: 0 });
    expect((await put(1, 200, { 'if-none-match': '*' })).statusCode).toBe(200);
  });

  it('refuses a rollback that would go over a lowered limit with 409 QUOTA_EXCEEDED, writing nothing; shrinking stays allowed', async () => {
    // A second instance on the same database with half the limit: the world was filled under the old one.
    const dataDir = await mkdtemp(join(tmpdir(), 'atrium-lowered-'));
    const lowered = await buildCheckedApp(
      testConfig(dataDir, app().testDb, { MAX_WORLD_CONTENT_BYTES: LIMIT / 2 }),
      {
        db: app().testDb.db,
      },
    );
    try {
      const { put, remove, state, owner, worldId } = await setup();
      const a = (await put(1, 450, { 'if-none-match': '*' })).json().revision;
      const b = (await put(2, 450, { 'if-none-match': '*' })).json().revision;
      await remove(1, { 'if-match': `"${a}"` });
      await remove(2, { 'if-match': `"${b}"` });
      const login = await lowered.http.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { username: owner.user.username, password: PASSWORD },
      });
      const token = login.json().access_token as string;
      const rollback = (revision: number) =>
        lowered.http.inject({
          method: 'POST',
          url: `/api/worlds/${worldId}/rollback`,
          headers: bearer(token),
          payload: { revision },
        });
      const before = await state();

      const refused = await rollback(b);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: LIMIT / 2 });
      expect(await state()).toEqual(before);

      // Back to a, only chunk 1 (450 bytes) comes back: within the lowered limit.
      expect((await rollback(a)).statusCode).toBe(200);
      expect(await state()).toMatchObject({ stored: 450, recomputed: 450 });
    } finally {
      await lowered.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
