import {
  chunksBatch,
  chunksDelete,
  chunksPut,
  chunksSubscribe,
  chunksUnsubscribe,
  worldsRollback,
} from '../../../protocol/chunks.js';
import { favoritesGet, favoritesPut } from '../../../protocol/favorites.js';
import { internalRoomsList, internalWorldsGet } from '../../../protocol/internal.js';
import { chunksLoad } from '../../../protocol/room-content.js';
import {
  chunksList,
  revisionsList,
  roomsCreate,
  roomsDelete,
  roomsGet,
  roomsList,
  roomsUpdate,
  worldsCreate,
  worldsDelete,
  worldsGet,
  worldsUpdate,
} from '../../../protocol/worlds.js';
import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { UsersApi } from '../users/index.js';
import { binaryBatch, preconditionFrom, registerBatchRoute } from './batch.routes.js';
import { ChunkStreams } from './chunk-streams.js';
import { registerChunkRoutes } from './chunks.routes.js';
import { ChunksService } from './chunks.service.js';
import { FavoritesService } from './favorites.service.js';
import { HistoryService } from './history.service.js';
import { HistoryRetention } from './history-retention.js';
import { RollbackService } from './rollback.service.js';
import { registerRoomContentRoute, sendRoomContent } from './room-content.routes.js';
import { RoomContentService } from './room-content.service.js';
import { findWorld, streamPosition, type WorldRow } from './worlds.repository.js';
import { type WorldSavedListener, WorldsService } from './worlds.service.js';

export type { WorldRow, WorldSavedListener };

/** What other modules see of a world: enough to decide who may read what belongs to it. */
export type WorldAccess = Pick<WorldRow, 'id' | 'ownerId' | 'visibility'>;

export interface WorldsApi {
  /** The world whatever the caller may see (undefined when none): for modules with their own rule. */
  lookup(ctx: Ctx, worldId: string): Promise<WorldAccess | undefined>;
  /** The world if the caller may read it; 404 NOT_FOUND otherwise (unknown, malformed id or private). */
  readable(ctx: Ctx, worldId: string): Promise<WorldAccess>;
  /**
   * Registers a listener told on the deleting node once a world was deleted: for modules whose
   * rows went with it by cascade and who must act beyond the database (game servers' sockets).
   */
  onDeleted(listener: (worldId: string) => Promise<void>): void;
  /**
   * Registers a listener run in the transaction that creates or updates a world, with the world as
   * it now is: for modules that keep a copy of what they need of it (discovery's search rows).
   */
  onSaved(listener: WorldSavedListener): void;
  /** A room of a world the caller may read; 404 also when the room belongs to another world. */
  readableRoom(
    ctx: Ctx,
    worldId: string,
    roomId: string,
  ): Promise<{ world: WorldAccess; room: { id: string } }>;
}

/** Worlds, their rooms and their chunk content (docs/worlds.md). */
export const worldsModule = defineModule({
  name: 'worlds',
  entities: [],
  tables: ['worlds', 'rooms', 'chunks', 'chunk_revisions', 'profile_favorites'],
  needs: ['users'],
  setup(platform, { users }: { users: UsersApi }) {
    const streams = new ChunkStreams({
      bus: platform.bus,
      log: platform.log,
      behindAboveBytes: platform.config.WS_MAX_BUFFERED_BYTES / 2,
    });
    const { config } = platform;
    const worlds = new WorldsService(streams, {
      maxWorldsPerUser: config.MAX_WORLDS_PER_USER,
      maxRoomsPerWorld: config.MAX_ROOMS_PER_WORLD,
      createLimiter: createLimiter(platform.kv, {
        keyPrefix: 'world-create',
        points: config.CREATE_RATE_LIMIT_COUNT,
        durationSeconds: config.CREATE_RATE_LIMIT_WINDOW_SECONDS,
      }),
    });
    const chunks = new ChunksService(worlds, streams, config.MAX_WORLD_CONTENT_BYTES);
    const rollbacks = new RollbackService(worlds, streams, config.MAX_WORLD_CONTENT_BYTES);
    const retention = new HistoryRetention({
      em: () => platform.ctx({ user: null, log: platform.log, ip: 'internal' }).em,
      log: platform.log,
      settings: {
        retentionSeconds: config.WORLD_HISTORY_RETENTION_SECONDS,
        maxRevisions: config.WORLD_HISTORY_MAX_REVISIONS,
      },
      intervalSeconds: config.WORLD_HISTORY_PRUNE_INTERVAL_SECONDS,
    });
    const favorites = new FavoritesService(users);
    const roomContent = new RoomContentService(worlds);
    const history = new HistoryService(worlds);
    // Paced pages wait for the client to read its buffer below this, well inside the slow-consumer limit.
    const drainBelow = Math.min(256 * 1024, platform.config.WS_MAX_BUFFERED_BYTES / 2);
    const api: WorldsApi = {
      lookup: async (ctx, worldId) => (isId(worldId) ? findWorld(ctx.em, worldId) : undefined),
      readable: (ctx, worldId) => worlds.readable(ctx, worldId),
      readableRoom: (ctx, worldId, roomId) => worlds.readableRoom(ctx, worldId, roomId),
      onDeleted: (listener) => worlds.onDeleted(listener),
      onSaved: (listener) => worlds.onSaved(listener),
    };
    return {
      api,
      routes: (http) => {
        registerChunkRoutes(http, chunks, (request) => platform.ctx(request));
        registerBatchRoute(http, chunks, (request) => platform.ctx(request));
        registerRoomContentRoute(http, roomContent, (request) => platform.ctx(request));
      },
      operations: [
        serve(worldsCreate, (ctx, input) => worlds.create(ctx, input)),
        serve(worldsGet, (ctx, { world_id }) => worlds.get(ctx, world_id)),
        serve(internalWorldsGet, (ctx, { world_id }) => worlds.get(ctx, world_id)),
        serve(worldsUpdate, (ctx, { world_id, ...patch }) => worlds.update(ctx, world_id, patch)),
        serve(worldsDelete, (ctx, { world_id }) => worlds.delete(ctx, world_id)),
        serve(roomsList, (ctx, { world_id, ...page }) => worlds.listRooms(ctx, world_id, page)),
        serve(internalRoomsList, (ctx, { world_id, ...page }) => worlds.listRooms(ctx, world_id, page)),
        serve(roomsCreate, (ctx, { world_id, name }) => worlds.createRoom(ctx, world_id, name)),
        serve(roomsGet, (ctx, { world_id, room_id }) => worlds.getRoom(ctx, world_id, room_id)),
        serve(roomsUpdate, (ctx, { world_id, room_id, name }) =>
          worlds.renameRoom(ctx, world_id, room_id, name),
        ),
        serve(roomsDelete, (ctx, { world_id, room_id }) => worlds.deleteRoom(ctx, world_id, room_id)),
        serve(chunksList, (ctx, { world_id, room_id, ...page }) =>
          worlds.listChunks(ctx, world_id, room_id, page),
        ),
        serve(revisionsList, (ctx, { world_id, ...query }) => history.list(ctx, world_id, query)),
        serve(chunksLoad, async (ctx, { world_id, room_id }, connection, requestId) => {
          if (requestId === undefined)
            throw new AppError(
              ErrorCode.VALIDATION_FAILED,
              'chunks.load needs a request id: its pages carry it.',
              {
                errors: [{ path: 'id', message: 'is required' }],
              },
            );
          return sendRoomContent(
            connection,
            requestId,
            await roomContent.load(ctx, world_id, room_id),
            drainBelow,
          );
        }),
        serve(worldsRollback, (ctx, { world_id, revision, expected_content_revision }) =>
          rollbacks.rollback(ctx, world_id, revision, expected_content_revision),
        ),
        serve(chunksPut, (ctx, { world_id, room_id, x, y, z, payload, expected_revision }) =>
          chunks.write(ctx, world_id, {
            roomId: room_id,
            key: { x, y, z },
            payload,
            precondition: preconditionFrom(expected_revision),
          }),
        ),
        serve(chunksDelete, (ctx, { world_id, room_id, x, y, z, expected_revision }) =>
          chunks.write(ctx, world_id, {
            roomId: room_id,
            key: { x, y, z },
            payload: null,
            precondition: preconditionFrom(expected_revision),
          }),
        ),
        serve(chunksBatch, (ctx, { world_id, ...body }) => {
          const batch = binaryBatch(body);
          return chunks.commit(ctx, {
            worldId: world_id,
            writes: batch.writes,
            expectedContentRevision: batch.expected,
            pathOf: (i) => `d.writes.${i}`,
          });
        }),
        serve(chunksSubscribe, async (ctx, { world_id, room_id }, connection) => {
          const { world, room } = room_id
            ? await worlds.readableRoom(ctx, world_id, room_id)
            : { world: await worlds.readable(ctx, world_id), room: undefined };
          const contentRevision = await streams.subscribe(connection, world, room?.id ?? null, () =>
            streamPosition(ctx.em, world.id),
          );
          return { world_id: world.id, room_id: room?.id ?? null, content_revision: contentRevision };
        }),
        // Streams are kept under canonical ids (as the database spells them), so match them that way.
        serve(chunksUnsubscribe, (_ctx, { world_id, room_id }, connection) => {
          streams.unsubscribe(connection, canonicalId(world_id), room_id ? canonicalId(room_id) : null);
          return {};
        }),
        serve(favoritesGet, (ctx) => favorites.get(ctx)),
        serve(favoritesPut, (ctx, { world_ids }) => favorites.replace(ctx, world_ids)),
      ],
      start: async () => retention.start(),
      stop: () => retention.stop(),
    };
  },
});
