import { internalStatusReport } from './gameservers.js';
import { type Operation, operation } from './operation.js';
import { roomsList, worldsGet } from './worlds.js';

/**
 * The internal API for dedicated game servers (docs/gameservers.md): read-only world content for
 * the world a server was spawned for, and the server's own status report. Every route takes the
 * server's per-spawn token (`Authorization: Bearer <--server-token>`); a user's access token is
 * refused (401), and a token used for another world answers 403.
 */

/** The /internal twin of a user route's path (`/api/worlds/...` -> `/internal/worlds/...`). */
export function internalPath(apiPath: string): string {
  if (!apiPath.startsWith('/api/')) throw new Error(`${apiPath} is not an /api path`);
  return `/internal/${apiPath.slice('/api/'.length)}`;
}

const tag = 'internal';

/** A room's chunks in bulk, as the contract names it (the users' twin is `.../content`). */
export const INTERNAL_ROOM_CHUNKS_PATH = '/internal/worlds/:world_id/rooms/:room_id/chunks';
/** The read-only twin of a user operation, served by the same service function. */
function readTwin<const Name extends string, O extends Operation>(name: Name, of: O, summary: string) {
  if (of.rest?.method !== 'GET') throw new Error(`${of.name} has no GET route to mirror`);
  return operation(name, {
    tag,
    summary,
    gameServer: true,
    rest: { method: 'GET', path: internalPath(of.rest.path) },
    request: of.request as O['request'],
    response: of.response as O['response'],
    errors: [401, 403, 404, ...of.errors.filter((status) => status === 422)],
  });
}

export const internalWorldsGet = readTwin(
  'internal.worlds.get',
  worldsGet,
  "The server's world with its rooms and content revision.",
);

export const internalRoomsList = readTwin(
  'internal.rooms.list',
  roomsList,
  "The rooms of the server's world, oldest first.",
);

export const internalOperations = [internalWorldsGet, internalRoomsList, internalStatusReport] as const;
