import { fileURLToPath } from 'node:url';
import { decode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Operation, PlainRestTwin } from '../../protocol/operation.js';
import { operations } from '../../protocol/operations.js';
import { hookableOperations } from '../../src/modules/extensions/registry.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';

const EXTENSION = fileURLToPath(new URL('./fixtures/plain-routes.mjs', import.meta.url));
interface Seen {
  hook: 'before' | 'after';
  op: string;
  input: Record<string, unknown>;
  result?: unknown;
}
const kit = globalThis as unknown as { plainSeen: Seen[]; plainRefusedRoom?: string };
const lastSeen = (hook: Seen['hook'], op: string) =>
  kit.plainSeen.filter((entry) => entry.hook === hook && entry.op === op).at(-1);

/**
 * The operations whose REST twin is a plain route (codec bytes, If-Match headers, a streamed
 * answer) run their hooks on REST as on the socket, with the input the frame carries
 * (docs/extensions.md, "REST twins that are plain routes").
 */
describe('hooks on operations served by plain REST routes', () => {
  const app = useTestApp({ EXTENSIONS: EXTENSION });
  const sockets = openedSockets(() => app().wsUrl);
  let alice: TokenResponse;
  let socket: TestSocket;
  let worldId: string;
  let roomId: string;
  beforeAll(async () => {
    alice = await registerUser(app());
    socket = await sockets.open(alice.access_token);
    ({ worldId, mainRoomId: roomId } = await createWorld(app(), alice.access_token));
  });
  afterAll(() => sockets.closeAll());

  const chunkUrl = (x: number) => `/api/worlds/${worldId}/rooms/${roomId}/chunks/${x}/0/0`;
  const put = (x: number, headers: Record<string, string>, body: Buffer = chunkBytes(`tree-${x}`)) =>
    app().http.inject({
      method: 'PUT',
      url: chunkUrl(x),
      headers: { ...bearer(alice.access_token), 'content-type': 'application/octet-stream', ...headers },
      payload: body,
    });
  const liveChunks = async () =>
    (
      await queryRows<{ count: number }>(
        app().db,
        'select count(*)::int as count from chunks where world_id = ? and not deleted',
        [worldId],
      )
    )[0]?.count;

  it('gives a REST chunk write the input of the chunks.put frame, and its after hook the answer', async () => {
    const body = chunkBytes('tree-1');
    const written = await put(1, { 'if-none-match': '*' }, body);
    expect(written.statusCode).toBe(200);
    const restInput = lastSeen('before', 'chunks.put')?.input;
    expect(restInput).toEqual({
      world_id: worldId,
      room_id: roomId,
      x: 1,
      y: 0,
      z: 0,
      payload: new Uint8Array(body),
      expected_revision: null,
    });
    await vi.waitFor(() => expect(lastSeen('after', 'chunks.put')?.result).toEqual(written.json()));

    const frame = await request(socket, 'chunks.put', {
      world_id: worldId,
      room_id: roomId,
      x: 2,
      y: 0,
      z: 0,
      payload: chunkBytes('tree-2'),
      expected_revision: null,
    });
    expect(frame.t).toBe('ack');
    expect(Object.keys(lastSeen('before', 'chunks.put')?.input ?? {}).sort()).toEqual(
      Object.keys(restInput ?? {}).sort(),
    );
  });

  it('shows If-Match with a revision as expected_revision, and If-Match: * as none while it still applies', async () => {
    const revision = (await put(3, { 'if-none-match': '*' })).json().revision as number;
    expect((await put(3, { 'if-match': `"${revision}"` })).statusCode).toBe(200);
    expect(lastSeen('before', 'chunks.put')?.input.expected_revision).toBe(revision);
    expect((await put(3, { 'if-match': '*' })).statusCode).toBe(200);
    expect(lastSeen('before', 'chunks.put')?.input).not.toHaveProperty('expected_revision');
    // The header's precondition still holds: If-Match: * on a chunk that does not exist fails.
    const absent = await put(4, { 'if-match': '*' });
    expect(absent.statusCode).toBe(409);
    expect(absent.json().code).toBe('REVISION_CONFLICT');
  });

  it('answers a before hook refusal on a REST chunk write or delete and writes nothing', async () => {
    const before = await liveChunks();
    const refused = await put(13, { 'if-none-match': '*' });
    expect(refused.statusCode).toBe(422);
    expect(refused.json()).toMatchObject({ code: 'UNLUCKY_CHUNK', detail: 'Nothing is built at x 13.' });
    const deleted = await app().http.inject({
      method: 'DELETE',
      url: chunkUrl(13),
      headers: { ...bearer(alice.access_token), 'if-match': '*' },
    });
    expect(deleted.statusCode).toBe(422);
    expect(lastSeen('before', 'chunks.delete')?.input).toEqual({
      world_id: worldId,
      room_id: roomId,
      x: 13,
      y: 0,
      z: 0,
    });
    expect(await liveChunks()).toBe(before);
  });

  it('gives a JSON batch the chunks.batch input with codec bytes, and refuses it whole', async () => {
    const before = await liveChunks();
    const refused = await app().http.inject({
      method: 'POST',
      url: `/api/worlds/${worldId}/chunks/batch`,
      headers: bearer(alice.access_token),
      payload: {
        writes: [
          {
            room_id: roomId,
            x: 20,
            y: 0,
            z: 0,
            payload: chunkBytes('a').toString('base64'),
            expected_revision: null,
          },
          { room_id: roomId, x: 13, y: 0, z: 0, chunk: { objects: [] }, expected_revision: null },
        ],
      },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().code).toBe('UNLUCKY_CHUNK');
    expect(await liveChunks()).toBe(before);
    const { writes } = lastSeen('before', 'chunks.batch')?.input ?? {};
    if (!Array.isArray(writes)) throw new Error('the batch hook saw no writes');
    expect(writes[0]?.payload).toEqual(new Uint8Array(chunkBytes('a')));
    expect(writes[1]?.payload).toBeInstanceOf(Uint8Array);
    expect(writes[1]).not.toHaveProperty('chunk');
  });

  it('runs the room load hooks on REST: the before hook may refuse, the after hook sees the summary once it was sent', async () => {
    const url = `/api/worlds/${worldId}/rooms/${roomId}/content`;
    const loaded = await app().http.inject({ method: 'GET', url, headers: bearer(alice.access_token) });
    expect(loaded.statusCode).toBe(200);
    const document = decode(loaded.rawPayload) as { content_revision: number; count: number };
    expect(lastSeen('before', 'chunks.load')?.input).toEqual({ world_id: worldId, room_id: roomId });
    await vi.waitFor(() =>
      expect(lastSeen('after', 'chunks.load')?.result).toEqual({
        content_revision: document.content_revision,
        count: document.count,
      }),
    );
    kit.plainRefusedRoom = roomId;
    const refused = await app().http.inject({ method: 'GET', url, headers: bearer(alice.access_token) });
    kit.plainRefusedRoom = undefined;
    expect(refused.statusCode).toBe(422);
    expect(refused.json().code).toBe('UNLUCKY_CHUNK');
  });

  it('covers every operation of the catalogue whose REST twin is a plain route', () => {
    // A twin naming another catalogue operation (chat.send's) is that operation's route, not a plain one.
    const isPlain = (op: Operation, twin: PlainRestTwin) =>
      twin.operationId === op.name || !(twin.operationId in operations);
    const plainRouted = Object.values(operations as Record<string, Operation>)
      .filter(
        (op) =>
          hookableOperations.has(op.name) && [op.restRoute ?? []].flat().some((twin) => isPlain(op, twin)),
      )
      .map((op) => op.name);
    expect(plainRouted.sort()).toEqual(['chunks.batch', 'chunks.delete', 'chunks.load', 'chunks.put']);
  });

  it('declares the hook refusals in the OpenAPI entries of the hooked plain routes', async () => {
    const document = (await app().http.inject({ method: 'GET', url: '/openapi.json' })).json();
    const chunk = document.paths['/api/worlds/{world_id}/rooms/{room_id}/chunks/{x}/{y}/{z}'];
    for (const entry of [chunk.put, chunk.delete, document.paths['/api/worlds/{world_id}/chunks/batch'].post])
      expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(['4XX', '500', '503']));
    expect(Object.keys(chunk.get.responses)).not.toContain('4XX');
  });
});
