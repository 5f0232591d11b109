import { afterAll, describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createRoom, createWorld } from '../helpers/worlds.js';
import { openedSockets, request } from '../helpers/ws-client.js';

const bytesOf = (id: string) => chunkBytes(id);

describe('rollback', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);
  afterAll(() => closeAll());

  async function setup(visibility = 'private') {
    const owner = await registerUser(app());
    const { worldId, mainRoomId: room } = await createWorld(app(), owner.access_token, { visibility });
    const url = (x: number) => `/api/worlds/${worldId}/rooms/${room}/chunks/${x}/0/0`;
    const token = owner.access_token;
    const write = async (x: number, body: Buffer | null, precondition: Record<string, string>) => {
      const response = await app().http.inject({
        method: body ? 'PUT' : 'DELETE',
        url: url(x),
        headers: {
          ...bearer(token),
          ...precondition,
          ...(body ? { 'content-type': 'application/octet-stream' } : {}),
        },
        ...(body ? { payload: body } : {}),
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json().revision as number;
    };
    const read = (x: number) => app().http.inject({ method: 'GET', url: url(x), headers: bearer(token) });
    const rollback = (payload: object, as = token) =>
      app().http.inject({
        method: 'POST',
        url: `/api/worlds/${worldId}/rollback`,
        headers: bearer(as),
        payload,
      });
    const revisionCount = async () =>
      (await queryRows(app().db, 'select id from chunk_revisions where world_id = ?', [worldId])).length;
    return { owner, token, worldId, write, read, rollback, revisionCount };
  }

  it('restores every chunk as of the target: changes undone, deletions back, creations tombstoned, history kept', async () => {
    const { write, read, rollback, revisionCount } = await setup();
    const a1 = await write(1, bytesOf('a1'), { 'if-none-match': '*' });
    const b1 = await write(2, bytesOf('b1'), { 'if-none-match': '*' });
    await write(1, bytesOf('a2'), { 'if-match': `"${a1}"` });
    await write(2, null, { 'if-match': `"${b1}"` });
    await write(3, bytesOf('c1'), { 'if-none-match': '*' });
    const before = await revisionCount();

    const response = await rollback({ revision: b1 });
    expect(response.statusCode, response.body).toBe(200);
    const { content_revision, restored } = response.json();
    expect(restored).toBe(3);
    expect(await revisionCount()).toBe(before + 3);

    expect((await read(1)).rawPayload.equals(bytesOf('a1'))).toBe(true);
    expect((await read(2)).rawPayload.equals(bytesOf('b1'))).toBe(true);
    expect((await read(3)).statusCode).toBe(404);
    expect(Number((await read(1)).headers.etag?.replace(/"/g, ''))).toBeGreaterThan(b1);
    expect(content_revision).toBeGreaterThan(b1);
  });

  it('rolls back to 0 by tombstoning everything, and to the current revision by writing nothing', async () => {
    const { write, read, rollback, revisionCount } = await setup();
    const a = await write(1, bytesOf('a'), { 'if-none-match': '*' });
    const same = await rollback({ revision: a });
    expect(same.json()).toEqual({ content_revision: a, restored: 0 });
    const count = await revisionCount();
    const empty = await rollback({ revision: 0 });
    expect(empty.json().restored).toBe(1);
    expect((await read(1)).statusCode).toBe(404);
    expect(await revisionCount()).toBe(count + 1);
  });

  it('streams a rollback without payloads: followers of its rooms resync from the revision they had, followers of other rooms hear nothing', async () => {
    const { token, worldId, write, rollback } = await setup();
    const a = await write(1, bytesOf('a'), { 'if-none-match': '*' });
    const b = await write(1, bytesOf('b'), { 'if-match': `"${a}"` });
    const hall = await createRoom(app(), token, worldId, 'hall');
    const world = await open(token);
    const hallOnly = await open(token);
    await request(world, 'chunks.subscribe', { world_id: worldId });
    await request(hallOnly, 'chunks.subscribe', { world_id: worldId, room_id: hall });

    expect((await rollback({ revision: a })).statusCode).toBe(200);
    const streamed = (frame: { t: string }) => frame.t === 'chunks.commit' || frame.t === 'chunks.resync';
    expect(await world.next(streamed)).toEqual({
      t: 'chunks.resync',
      d: { world_id: worldId, from_revision: b, reason: 'large_commit' },
    });
    const inHall = await app().http.inject({
      method: 'PUT',
      url: `/api/worlds/${worldId}/rooms/${hall}/chunks/0/0/0`,
      headers: { ...bearer(token), 'if-none-match': '*', 'content-type': 'application/octet-stream' },
      payload: bytesOf('h'),
    });
    expect(inHall.statusCode).toBe(200);
    // The hall's follower gets the hall's commit first: the rollback touched only the main room.
    const first = await hallOnly.next(streamed);
    expect(first.t).toBe('chunks.commit');
    expect((first.d as { content_revision: number }).content_revision).toBe(inHall.json().content_revision);
  });

  it('refuses a revision of another world with 404 and writes nothing', async () => {
    const mine = await setup();
    const theirs = await setup();
    const own = await mine.write(1, bytesOf('a'), { 'if-none-match': '*' });
    const foreign = await theirs.write(1, bytesOf('z'), { 'if-none-match': '*' });
    await mine.write(1, bytesOf('b'), { 'if-match': `"${own}"` });
    const count = await mine.revisionCount();

    const response = await mine.rollback({ revision: foreign });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('NOT_FOUND');
    expect(await mine.revisionCount()).toBe(count);
    expect((await mine.read(1)).rawPayload.equals(bytesOf('b'))).toBe(true);
  });

  it.each([
    [
      'a revision after the content revision',
      (current: number) => ({ revision: current + 1 }),
      422,
      'VALIDATION_FAILED',
    ],
    ['a negative revision', () => ({ revision: -1 }), 422, 'VALIDATION_FAILED'],
    ['a fractional revision', () => ({ revision: 1.5 }), 422, 'VALIDATION_FAILED'],
    [
      'a stale expected_content_revision',
      (current: number) => ({ revision: 0, expected_content_revision: current - 1 }),
      409,
      'REVISION_CONFLICT',
    ],
  ])('refuses %s and writes nothing', async (_case, body, status, code) => {
    const { write, rollback, revisionCount } = await setup();
    const current = await write(1, bytesOf('a'), { 'if-none-match': '*' });
    const count = await revisionCount();
    const response = await rollback(body(current));
    expect(response.statusCode).toBe(status);
    expect(response.json().code).toBe(code);
    expect(await revisionCount()).toBe(count);
  });

  it('names the revision where REST carries it: body.revision', async () => {
    const { write, rollback } = await setup();
    const current = await write(1, bytesOf('a'), { 'if-none-match': '*' });
    const response = await rollback({ revision: current + 1 });
    expect(response.json()).toMatchObject({
      detail: `body.revision: the world is at ${current}`,
      errors: [{ path: 'body.revision', message: `is after the content revision ${current}` }],
    });
  });

  it('lets only the owner roll back: a reader gets 403, a stranger to a private world 404, anonymous 401', async () => {
    const open = await setup('public');
    const hidden = await setup('private');
    const other = await registerUser(app());
    expect((await open.rollback({ revision: 0 }, other.access_token)).statusCode).toBe(403);
    expect((await hidden.rollback({ revision: 0 }, other.access_token)).statusCode).toBe(404);
    const anonymous = await app().http.inject({
      method: 'POST',
      url: `/api/worlds/${open.worldId}/rollback`,
      payload: { revision: 0 },
    });
    expect(anonymous.statusCode).toBe(401);
  });
});
