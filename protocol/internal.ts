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

/** One GET route of a user operation registered as a plain route, and its twin for game servers. */
export interface ReadTwin {
  path: string;
  operationId: string;
  /** The /internal twin: called with a server token, and its OpenAPI tag is `internal`. */
  gameServer: boolean;
  tag: string;
}

/** A plain users' GET route with its read-only /internal twin (a path of its own, or the mirrored one). */
export function withInternalTwin(
  users: { path: string; operationId: string; tag: string },
  internal: { operationId: string; path?: string },
): ReadTwin[] {
  return [
    { ...users, gameServer: false },
    {
      path: internal.path ?? internalPath(users.path),
      operationId: internal.operationId,
      gameServer: true,
      tag,
    },
  ];
}

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
