import { expect } from 'vitest';
import { type Chunk, encodeChunk } from '../../protocol/chunk-codec.js';
import type { App } from '../../src/app.js';
import { bearer, registerUser } from './accounts.js';

/** A node a test talks to over HTTP: the in-process app, or one instance of a cluster. */
type Node = Pick<App, 'http'>;

/** A chunk holding one object named `id` at (x, 0.1, -0), with optional props. */
export function sampleChunk(id: string, x = 1, props?: Record<string, unknown>): Chunk {
  return {
    objects: [
      {
        id,
        asset_id: 'asset.tree.oak',
        position: Float32Array.of(x, 0.1, -0),
        rotation: Float32Array.of(0, 0, 0, 1),
        scale: Float32Array.of(1, 1, 1),
        ...(props ? { props } : {}),
      },
    ],
  };
}

/** The codec bytes of `sampleChunk`. */
export const chunkBytes = (id: string, x?: number, props?: Record<string, unknown>) =>
  Buffer.from(encodeChunk(sampleChunk(id, x, props)));

/** Creates a world owned by the token's user; answers its id and its room main's. */
export async function createWorld(
  node: Node,
  token: string,
  options: { name?: string; visibility?: string } = {},
): Promise<{ worldId: string; mainRoomId: string }> {
  const created = await node.http.inject({
    method: 'POST',
    url: '/api/worlds',
    headers: bearer(token),
    payload: { name: options.name ?? 'World', visibility: options.visibility ?? 'private' },
  });
  if (created.statusCode !== 201) throw new Error(`createWorld: ${created.statusCode} ${created.body}`);
  const world = created.json() as { id: string; rooms: { id: string }[] };
  return { worldId: world.id, mainRoomId: world.rooms[0]?.id as string };
}

/** Adds a room to a world; answers its id. */
export async function createRoom(node: Node, token: string, worldId: string, name: string): Promise<string> {
  const created = await node.http.inject({
    method: 'POST',
    url: `/api/worlds/${worldId}/rooms`,
    headers: bearer(token),
    payload: { name },
  });
  if (created.statusCode !== 201) throw new Error(`createRoom: ${created.statusCode} ${created.body}`);
  return (created.json() as { id: string }).id;
}

/**
 * A world of a fresh user with one chunk written (revision `first`) and then replaced (content
 * revision `second`): something to read the history of and roll back.
 */
export async function worldWithHistory(node: App, options: { name?: string; visibility?: string } = {}) {
  const owner = await registerUser(node);
  const { worldId, mainRoomId } = await createWorld(node, owner.access_token, options);
  const put = async (id: string, precondition: Record<string, string>) => {
    const response = await node.http.inject({
      method: 'PUT',
      url: `/api/worlds/${worldId}/rooms/${mainRoomId}/chunks/0/0/0`,
      headers: { ...bearer(owner.access_token), 'content-type': 'application/octet-stream', ...precondition },
      payload: chunkBytes(id),
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().revision as number;
  };
  const first = await put('first', { 'if-none-match': '*' });
  const second = await put('second', { 'if-match': `"${first}"` });
  return { owner, worldId, first, second };
}
