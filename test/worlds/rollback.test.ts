import { afterAll, describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
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

  it('streams the rollback as one commit to subscribers', async () => {
    const { token, worldId, write, rollback } = await setup();
    const a = await write(1, bytesOf('a'), { 'if-none-match': '*' });
    await write(1, bytesOf('b'), { 'if-match': `"${a}"` });
    const socket = await open(token);
    await request(socket, 'chunks.subscribe', { world_id: worldId });
    await rollback({ revision: a });
    const event = await socket.next((f) => f.t === 'chunks.commit');
    const revisions = (event.d as { revisions: { payload: Uint8Array; deleted: boolean }[] }).revisions;
    expect(revisions).toHaveLength(1);
    expect(Buffer.from(revisions[0]?.payload as Uint8Array).equals(bytesOf('a'))).toBe(true);
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
