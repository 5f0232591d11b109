import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { buildCheckedApp, testConfig, useTestApp } from '../helpers/app.js';
import { createRoom, createWorld } from '../helpers/worlds.js';
import { batch, chunkOfSize, contentState, retentionOf } from './content-fixtures.js';

const LIMIT = 1000;

/**
 * MAX_WORLD_CONTENT_BYTES: every payload byte a world stores, its live chunks' and the history it
 * keeps, counted in the world's row.
 */
describe('stored content bytes per world, live and kept history', () => {
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
    /** Writes the chunk `times` times over (created first), each `size` bytes; answers its last revision. */
    const rewrite = async (x: number, size: number, times: number, room = mainRoomId) => {
      let revision: number | undefined;
      for (let i = 0; i < times; i++) {
        const written = await put(
          x,
          size,
          revision === undefined ? { 'if-none-match': '*' } : { 'if-match': `"${revision}"` },
          room,
        );
        expect(written.statusCode, written.body).toBe(200);
        revision = written.json().revision as number;
      }
      return revision as number;
    };
    const remove = (x: number, precondition: Record<string, string>) =>
      app().http.inject({
        method: 'DELETE',
        url: chunkUrl(mainRoomId, x),
        headers: { ...bearer(token), ...precondition },
      });
    const read = (x: number) =>
      app().http.inject({ method: 'GET', url: chunkUrl(mainRoomId, x), headers: bearer(token) });
    const rollback = (revision: number) =>
      app().http.inject({
        method: 'POST',
        url: `/api/worlds/${worldId}/rollback`,
        headers: bearer(token),
        payload: { revision },
      });
    const state = () => contentState(app(), worldId);
    return { owner, token, worldId, room: mainRoomId, put, rewrite, remove, read, rollback, state };
  }

  const refusedForQuota = (response: { statusCode: number; body: string; json(): unknown }) => {
    expect(response.statusCode, response.body).toBe(409);
    expect(response.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: LIMIT });
  };

  /** Retention by age: every revision is older than the window, so each chunk keeps its head alone. */
  const windowLapses = () =>
    retentionOf(app(), { retentionSeconds: 3600, maxRevisions: 32 }).runDue(
      new Date(Date.now() + 2 * 3600_000),
    );

  it('refuses the rewrite of one chunk that would take its live payload plus kept history over the limit with 409 QUOTA_EXCEEDED and the limit, writing nothing', async () => {
    const { put, rewrite, read, state } = await setup();
    const revision = await rewrite(1, 300, 3);
    const before = await state();
    expect(before).toEqual({ stored: 900, recomputed: 900, revisions: 3 });

    refusedForQuota(await put(1, 101, { 'if-match': `"${revision}"` }));
    expect(await state()).toEqual(before);
    expect((await read(1)).headers.etag).toBe(`"${revision}"`);

    const last = await put(1, 100, { 'if-match': `"${revision}"` });
    expect(last.statusCode, last.body).toBe(200);
    expect(await state()).toEqual({ stored: LIMIT, recomputed: LIMIT, revisions: 4 });
    // At the limit even a smaller payload is refused: the one it replaces stays as history.
    refusedForQuota(await put(1, 90, { 'if-match': `"${last.json().revision}"` }));
    expect(await state()).toEqual({ stored: LIMIT, recomputed: LIMIT, revisions: 4 });
  });

  it('gives the bytes of pruned revisions back: the per-chunk cap and the lapse of the retention window each make room again', async () => {
    const { put, rewrite, state } = await setup();
    let revision = await rewrite(1, 300, 3);
    refusedForQuota(await put(1, 300, { 'if-match': `"${revision}"` }));

    // Two revisions a chunk: the oldest of the three goes.
    await retentionOf(app(), { retentionSeconds: 3600, maxRevisions: 2 }).runDue(new Date());
    expect(await state()).toEqual({ stored: 600, recomputed: 600, revisions: 2 });
    const passed = await put(1, 300, { 'if-match': `"${revision}"` });
    expect(passed.statusCode, passed.body).toBe(200);
    revision = passed.json().revision;
    refusedForQuota(await put(1, 300, { 'if-match': `"${revision}"` }));

    await windowLapses();
    expect(await state()).toEqual({ stored: 300, recomputed: 300, revisions: 1 });
    expect((await put(1, 300, { 'if-match': `"${revision}"` })).statusCode).toBe(200);
    expect(await state()).toEqual({ stored: 600, recomputed: 600, revisions: 2 });
  });

  it('weighs a batch whole, its deletes making no room (what they delete stays as history); over the limit nothing is written', async () => {
    const { put, read, state, token, worldId, room } = await setup();
    const revision = (await put(1, 600, { 'if-none-match': '*' })).json().content_revision;
    const before = await state();

    // Each write fits alone; together they do not.
    const together = await batch(app(), token, worldId, revision, [
      { room_id: room, x: 2, y: 0, z: 0, payload: chunkOfSize('a', 300) },
      { room_id: room, x: 3, y: 0, z: 0, payload: chunkOfSize('b', 300) },
    ]);
    refusedForQuota(together);
    expect(await state()).toEqual(before);

    const swapped = await batch(app(), token, worldId, revision, [
      { room_id: room, x: 1, y: 0, z: 0, delete: true },
      { room_id: room, x: 2, y: 0, z: 0, payload: chunkOfSize('a', 500) },
    ]);
    refusedForQuota(swapped);
    expect(await state()).toEqual(before);
    expect((await read(1)).statusCode).toBe(200);
    expect((await read(2)).statusCode).toBe(404);

    const fits = await batch(app(), token, worldId, revision, [
      { room_id: room, x: 2, y: 0, z: 0, payload: chunkOfSize('a', 200) },
      { room_id: room, x: 3, y: 0, z: 0, payload: chunkOfSize('b', 200) },
    ]);
    expect(fits.statusCode, fits.body).toBe(200);
    expect(await state()).toEqual({ stored: LIMIT, recomputed: LIMIT, revisions: 3 });
  });

  it('lets a delete through at the limit, and frees its payload once retention prunes it', async () => {
    const { put, remove, state } = await setup();
    const first = (await put(1, 600, { 'if-none-match': '*' })).json().revision;
    expect((await put(2, 400, { 'if-none-match': '*' })).statusCode).toBe(200);
    refusedForQuota(await put(3, 100, { 'if-none-match': '*' }));

    expect((await remove(1, { 'if-match': `"${first}"` })).statusCode).toBe(200);
    expect(await state()).toEqual({ stored: LIMIT, recomputed: LIMIT, revisions: 3 });
    refusedForQuota(await put(3, 100, { 'if-none-match': '*' }));

    await windowLapses();
    expect(await state()).toEqual({ stored: 400, recomputed: 400, revisions: 2 });
    expect((await put(3, 100, { 'if-none-match': '*' })).statusCode).toBe(200);
  });

  it("gives a deleted room's bytes back to its world, its history's with them", async () => {
    const { put, rewrite, state, token, worldId } = await setup();
    const hall = await createRoom(app(), token, worldId, 'hall');
    await rewrite(1, 300, 3, hall);
    refusedForQuota(await put(1, 200, { 'if-none-match': '*' }));

    const deleted = await app().http.inject({
      method: 'DELETE',
      url: `/api/worlds/${worldId}/rooms/${hall}`,
      headers: bearer(token),
    });
    expect(deleted.statusCode).toBe(204);
    expect(await state()).toEqual({ stored: 0, recomputed: 0, revisions: 0 });
    expect((await put(1, 200, { 'if-none-match': '*' })).statusCode).toBe(200);
  });

  it('counts the revisions a rollback appends: over the limit it answers 409 QUOTA_EXCEEDED and writes nothing; back to the empty world (tombstones) it always passes', async () => {
    const { put, rollback, state } = await setup();
    const created = (await put(1, 400, { 'if-none-match': '*' })).json();
    expect((await put(1, 300, { 'if-match': `"${created.revision}"` })).statusCode).toBe(200);
    const before = await state();
    expect(before).toEqual({ stored: 700, recomputed: 700, revisions: 2 });

    refusedForQuota(await rollback(created.content_revision));
    expect(await state()).toEqual(before);

    const emptied = await rollback(0);
    expect(emptied.statusCode, emptied.body).toBe(200);
    expect(await state()).toEqual({ stored: 700, recomputed: 700, revisions: 3 });
  });

  it('counts writes sent at once under the world row lock: only those that fit pass, and the count stays exact', async () => {
    const { put, state } = await setup();
    const answers = await Promise.all([1, 2, 3, 4, 5].map((x) => put(x, 300, { 'if-none-match': '*' })));
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses).toEqual([200, 200, 200, 409, 409]);
    for (const answer of answers.filter((a) => a.statusCode === 409)) refusedForQuota(answer);
    expect(await state()).toEqual({ stored: 900, recomputed: 900, revisions: 3 });
  });

  it('lets a world over a lowered limit delete chunks, and refuses it any byte more', async () => {
    // A second instance on the same database with half the limit: the world was filled under the old one.
    const dataDir = await mkdtemp(join(tmpdir(), 'atrium-lowered-'));
    const lowered = await buildCheckedApp(
      testConfig(dataDir, app().testDb, { MAX_WORLD_CONTENT_BYTES: LIMIT / 2 }),
      { db: app().testDb.db },
    );
    try {
      const { put, owner, worldId, room, state } = await setup();
      const first = (await put(1, 450, { 'if-none-match': '*' })).json().revision;
      expect((await put(2, 450, { 'if-none-match': '*' })).statusCode).toBe(200);
      const login = await lowered.http.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { username: owner.user.username, password: PASSWORD },
      });
      const token = login.json().access_token as string;
      const chunk = (x: number) => `/api/worlds/${worldId}/rooms/${room}/chunks/${x}/0/0`;

      const removed = await lowered.http.inject({
        method: 'DELETE',
        url: chunk(1),
        headers: { ...bearer(token), 'if-match': `"${first}"` },
      });
      expect(removed.statusCode, removed.body).toBe(200);
      const before = await state();
      const refused = await lowered.http.inject({
        method: 'PUT',
        url: chunk(3),
        headers: { ...bearer(token), 'if-none-match': '*', 'content-type': 'application/octet-stream' },
        payload: chunkOfSize('c3', 100),
      });
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: LIMIT / 2 });
      expect(await state()).toEqual(before);
    } finally {
      await lowered.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
