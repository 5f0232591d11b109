import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { wireInteger } from './numbers.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * Worlds and their rooms. A world's content is its rooms' chunks (protocol/chunk-codec.md); each
 * write appends a revision, and `content_revision` is the world's newest revision id (0 before the
 * first write). Owners write; public and unlisted worlds are readable by every signed-in user,
 * private ones only by their owner, and a world the caller may not read is answered as 404.
 */

export const worldVisibilitySchema = z.enum(['public', 'unlisted', 'private']);
export type WorldVisibility = z.infer<typeof worldVisibilitySchema>;

export const WORLD_NAME_MAX_CHARS = 100;
export const WORLD_DESCRIPTION_MAX_CHARS = 2000;
export const ROOM_NAME_MAX_CHARS = 64;
/** The room every world is created with; it can be neither renamed nor deleted. */
export const MAIN_ROOM_NAME = 'main';

const id = z.string().max(64);
export const INT32 = { min: -2147483648, max: 2147483647 };
/** A chunk coordinate: a 32-bit signed integer (from a path segment, text). */
export const chunkCoordinate = wireInteger(INT32.min, INT32.max);

export const roomSummarySchema = z.object({ id: z.string(), name: z.string() });

export const worldSchema = z.object({
  id: z.string(),
  owner_id: z.string(),
  name: z.string(),
  description: z.string(),
  visibility: worldVisibilitySchema,
  content_revision: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  rooms: z.array(roomSummarySchema),
});
export type World = z.infer<typeof worldSchema>;

export const roomSchema = z.object({
  id: z.string(),
  world_id: z.string(),
  name: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Room = z.infer<typeof roomSchema>;

export const chunkKeySchema = z.object({
  x: z.number().int(),
  y: z.number().int(),
  z: z.number().int(),
  /** The chunk's current revision id (its ETag). */
  revision: z.number().int(),
});

/** A revision id from a query string (text). */
const revisionId = wireInteger(0, Number.MAX_SAFE_INTEGER);

/** One revision of a world's content: a chunk write, or a delete (a tombstone). */
export const revisionSchema = z.object({
  revision: z.number().int(),
  room_id: z.string(),
  x: z.number().int(),
  y: z.number().int(),
  z: z.number().int(),
  /** A tombstone: the chunk was deleted by this revision. */
  deleted: z.boolean(),
  /** The payload's length in bytes (0 for a tombstone). */
  size: z.number().int(),
  /** Null once the author's account is deleted. */
  author_id: z.string().nullable(),
  created_at: z.string(),
});
export type Revision = z.infer<typeof revisionSchema>;

const tag = 'worlds';

export const worldsCreate = operation('worlds.create', {
  tag,
  summary: `Create a world owned by the caller, with its room "${MAIN_ROOM_NAME}". New worlds are private unless visibility says otherwise. An account owns at most MAX_WORLDS_PER_USER worlds (default 100; 409 QUOTA_EXCEEDED with \`limit\`) and creates at most CREATE_RATE_LIMIT_COUNT per window (429).`,
  rest: { method: 'POST', path: '/api/worlds', status: 201 },
  request: z
    .object({
      name: text(1, WORLD_NAME_MAX_CHARS),
      description: text(0, WORLD_DESCRIPTION_MAX_CHARS).optional(),
      visibility: worldVisibilitySchema.optional(),
    })
    .strict(),
  response: worldSchema,
  errors: [401, 409, 422, 429],
});

export const worldsGet = operation('worlds.get', {
  tag,
  summary: 'A world with its rooms and content revision.',
  rest: { method: 'GET', path: '/api/worlds/:world_id' },
  request: z.object({ world_id: id }).strict(),
  response: worldSchema,
  errors: [401, 404],
});

export const worldsUpdate = operation('worlds.update', {
  tag,
  summary: 'Change any of name, description and visibility (owner only).',
  rest: { method: 'PATCH', path: '/api/worlds/:world_id' },
  request: z
    .object({
      world_id: id,
      name: text(1, WORLD_NAME_MAX_CHARS).optional(),
      description: text(0, WORLD_DESCRIPTION_MAX_CHARS).optional(),
      visibility: worldVisibilitySchema.optional(),
    })
    .strict(),
  response: worldSchema,
  errors: [401, 403, 404, 422],
});

export const worldsDelete = operation('worlds.delete', {
  tag,
  summary: 'Delete a world with its rooms, chunks and revisions (owner only).',
  rest: { method: 'DELETE', path: '/api/worlds/:world_id', status: 204 },
  request: z.object({ world_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404],
});

export const roomsList = operation('rooms.list', {
  tag,
  summary: "A world's rooms, oldest first.",
  rest: { method: 'GET', path: '/api/worlds/:world_id/rooms' },
  request: z.object({ world_id: id, ...listQuery }).strict(),
  response: pageOf(roomSchema),
  errors: [401, 404, 422],
});

export const roomsCreate = operation('rooms.create', {
  tag,
  summary:
    'Add a room (owner only). Names are unique per world regardless of case (409 CONFLICT). A world has at most MAX_ROOMS_PER_WORLD rooms (default 100; 409 QUOTA_EXCEEDED with `limit`).',
  rest: { method: 'POST', path: '/api/worlds/:world_id/rooms', status: 201 },
  request: z.object({ world_id: id, name: text(1, ROOM_NAME_MAX_CHARS) }).strict(),
  response: roomSchema,
  errors: [401, 403, 404, 409, 422],
});

export const roomsGet = operation('rooms.get', {
  tag,
  summary: 'One room of a world.',
  rest: { method: 'GET', path: '/api/worlds/:world_id/rooms/:room_id' },
  request: z.object({ world_id: id, room_id: id }).strict(),
  response: roomSchema,
  errors: [401, 404],
});

export const roomsUpdate = operation('rooms.update', {
  tag,
  summary: `Rename a room (owner only; "${MAIN_ROOM_NAME}" keeps its name).`,
  rest: { method: 'PATCH', path: '/api/worlds/:world_id/rooms/:room_id' },
  request: z.object({ world_id: id, room_id: id, name: text(1, ROOM_NAME_MAX_CHARS) }).strict(),
  response: roomSchema,
  errors: [401, 403, 404, 409, 422],
});

export const roomsDelete = operation('rooms.delete', {
  tag,
  summary: `Delete a room with its chunks and their revisions (owner only; "${MAIN_ROOM_NAME}" stays). The world's content revision becomes the largest revision id left, which may be smaller than before.`,
  rest: { method: 'DELETE', path: '/api/worlds/:world_id/rooms/:room_id', status: 204 },
  request: z.object({ world_id: id, room_id: id }).strict(),
  response: z.null(),
  errors: [401, 403, 404, 409],
});

export const chunksList = operation('chunks.list', {
  tag,
  summary: "A room's chunks (tombstones left out) with their current revisions, ordered by x, y, z.",
  rest: { method: 'GET', path: '/api/worlds/:world_id/rooms/:room_id/chunks' },
  request: z.object({ world_id: id, room_id: id, ...listQuery }).strict(),
  response: pageOf(chunkKeySchema),
  errors: [401, 404, 422],
});

export const revisionsList = operation('revisions.list', {
  tag,
  summary:
    "A world's revisions, newest first, with its content revision. `room_id` keeps one room's, `room_id` with `x`, `y` and `z` one chunk's; `since` keeps those newer than that revision. Moderators and admins read the history of any world, private ones included.",
  rest: { method: 'GET', path: '/api/worlds/:world_id/revisions' },
  request: z
    .object({
      world_id: id,
      ...listQuery,
      room_id: id.optional(),
      x: chunkCoordinate.optional(),
      y: chunkCoordinate.optional(),
      z: chunkCoordinate.optional(),
      since: revisionId.optional(),
    })
    .strict(),
  response: pageOf(revisionSchema).extend({
    content_revision: z.number().int(),
    horizon: z
      .number()
      .int()
      .describe(
        "The world's history horizon: older revisions may have been pruned, and a rollback may target this revision or a later one (or 0).",
      ),
  }),
  errors: [401, 404, 422],
});

/** A world as the administration lists show it: any visibility, with its owner's name. */
export const adminWorldSchema = worldSchema.omit({ rooms: true }).extend({ owner_username: z.string() });
export type AdminWorld = z.infer<typeof adminWorldSchema>;

export const adminWorldsList = operation('admin.worlds.list', {
  tag: 'admin',
  summary:
    'Every world whatever its visibility, newest first (moderators and admins; others 403 FORBIDDEN). `query` is an exact world id (that world alone) or matches a prefix of the name or words of it (case-insensitive), `visibility` and `owner_id` narrow it.',
  rest: { method: 'GET', path: '/api/admin/worlds' },
  request: z
    .object({
      query: text(0, WORLD_NAME_MAX_CHARS).optional(),
      visibility: worldVisibilitySchema.optional(),
      owner_id: id.optional(),
      ...listQuery,
    })
    .strict(),
  response: pageOf(adminWorldSchema),
  errors: [401, 403, 422],
});

export const adminWorldsUpdate = operation('admin.worlds.update', {
  tag: 'admin',
  summary:
    "Change any world's visibility (admins; others 403 FORBIDDEN), recorded in the audit log as `worlds.visibility` with the visibility before and after. Making a world private ends its non-owners' chunk streams as the owner's change does.",
  rest: { method: 'PATCH', path: '/api/admin/worlds/:world_id' },
  request: z.object({ world_id: id, visibility: worldVisibilitySchema }).strict(),
  response: worldSchema,
  errors: [401, 403, 404, 422],
});

export const worldOperations = [
  worldsCreate,
  worldsGet,
  worldsUpdate,
  worldsDelete,
  roomsList,
  roomsCreate,
  roomsGet,
  roomsUpdate,
  roomsDelete,
  chunksList,
  revisionsList,
  adminWorldsList,
  adminWorldsUpdate,
] as const;
