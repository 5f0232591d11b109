import type { FastifyRequest } from 'fastify';
import { worldsRollback } from '../../../protocol/chunks.js';
import { favoritesGet, favoritesPut } from '../../../protocol/favorites.js';
import { internalRoomsList, internalWorldsGet } from '../../../protocol/internal.js';
import {
  chatRoomHistory,
  chatSend,
  chatSendToRoom,
  chatSendToWorld,
  chatWorldHistory,
} from '../../../protocol/world-chat.js';
import {
  adminWorldsList,
  adminWorldsUpdate,
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
import { isId } from '../../platform/ids.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { ChatApi } from '../chat/index.js';
import type { UsersApi } from '../users/index.js';
import { registerBatchRoute } from './batch.routes.js';
import { chunkOperations } from './chunk-operations.js';
import { ChunkStreams } from './chunk-streams.js';
import { registerChunkRoutes, restWording } from './chunks.routes.js';
import { ChunksService } from './chunks.service.js';
import { FavoritesService } from './favorites.service.js';
import { HistoryService } from './history.service.js';
import { HistoryRetention } from './history-retention.js';
import { RollbackService } from './rollback.service.js';
import { registerRoomContentRoute } from './room-content.routes.js';
import { RoomContentService } from './room-content.service.js';
import { WorldAdminService } from './world-admin.service.js';
import { worldChatChannels } from './world-chat-channels.js';
import { frameWording, worldsFrames } from './worlds.frames.js';
import { findWorld, type WorldRow } from './worlds.repository.js';
import { type WorldDeletingListener, type WorldSavedListener, WorldsService } from './worlds.service.js';

export { worldOwnerSql } from './worlds.repository.js';
export type { WorldDeletingListener, WorldRow, WorldSavedListener };

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
   * Registers a listener run in the transaction that deletes a world, before the world's row is
   * deleted and the rows of other modules cascade: for a module whose writers lock its rows of the
   * world and then need the world's row (a game server join records a visit). The listener takes
   * those locks first, in the order its writers take them, so that the deletion waits for a
   * writer instead of deadlocking with it.
   */
  onDeleting(listener: WorldDeletingListener): void;
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
  tables: ['worlds', 'rooms', 'chunks', 'chunk_revisions', 'profile_favorites'],
  needs: ['users', 'audit', 'chat'],
  setup(platform, { users, audit, chat }: { users: UsersApi; audit: AuditApi; chat: ChatApi }) {
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
    const rollbacks = new RollbackService(worlds, streams, config.MAX_WORLD_CONTENT_BYTES, audit);
    const admin = new WorldAdminService(worlds, audit);
    const retention = new HistoryRetention({
      data: () => platform.ctx({ user: null, log: platform.log, ip: 'internal' }).data,
      log: platform.log,
      settings: {
        retentionSeconds: config.WORLD_HISTORY_RETENTION_SECONDS,
        maxRevisions: config.WORLD_HISTORY_MAX_REVISIONS,
      },
      intervalSeconds: config.WORLD_HISTORY_PRUNE_INTERVAL_SECONDS,
    });
    const favorites = new FavoritesService(users);
    const roomContent = new RoomContentService(worlds);
    const chunkWrites = chunkOperations(chunks);
    const history = new HistoryService(worlds);
    // Paced pages wait for the client to read its buffer below this, well inside the slow-consumer limit.
    const drainBelow = Math.min(256 * 1024, platform.config.WS_MAX_BUFFERED_BYTES / 2);
    // A world's chat and its rooms' take chat's pipeline, with this module's resolvers deciding who may use them.
    const chatChannels = worldChatChannels(worlds);
    const worldChat = chat.channelKind(chatChannels.world);
    const roomChat = chat.channelKind(chatChannels.room);
    const api: WorldsApi = {
      lookup: async (ctx, worldId) => (isId(worldId) ? findWorld(ctx.data, worldId) : undefined),
      readable: (ctx, worldId) => worlds.readable(ctx, worldId),
      readableRoom: (ctx, worldId, roomId) => worlds.readableRoom(ctx, worldId, roomId),
      onDeleted: (listener) => worlds.onDeleted(listener),
      onDeleting: (listener) => worlds.onDeleting(listener),
      onSaved: (listener) => worlds.onSaved(listener),
    };
    return {
      api,
      routes: (http) => {
        const ctxOf = (request: FastifyRequest) => platform.ctx(request);
        registerChunkRoutes(http, chunks, chunkWrites, platform.hooks, ctxOf);
        registerBatchRoute(http, chunkWrites, platform.hooks, ctxOf);
        registerRoomContentRoute(http, roomContent, platform.hooks, ctxOf);
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
        serve(
          worldsRollback,
          (ctx, { world_id, revision, expected_content_revision }) =>
            rollbacks.rollback(ctx, world_id, revision, expected_content_revision),
          { rest: restWording, frame: frameWording },
        ),
        ...worldsFrames({ worlds, chunkWrites, roomContent, streams, drainBelow }),
        serve(adminWorldsList, (ctx, query) => admin.list(ctx, query)),
        serve(adminWorldsUpdate, (ctx, { world_id, visibility }) =>
          admin.setVisibility(ctx, world_id, visibility),
        ),
        serve(favoritesGet, (ctx) => favorites.get(ctx)),
        serve(favoritesPut, (ctx, { world_ids }) => favorites.replace(ctx, world_ids)),
        serve(chatSendToWorld, (ctx, { world_id, body }) => worldChat.send(ctx, { world_id }, body)),
        serve(chatSendToRoom, (ctx, { world_id, room_id, body }) =>
          roomChat.send(ctx, { world_id, room_id }, body),
        ),
        serve(chatSend, (ctx, { world_id, room_id, body }) =>
          room_id === undefined
            ? worldChat.send(ctx, { world_id }, body)
            : roomChat.send(ctx, { world_id, room_id }, body),
        ),
        serve(chatWorldHistory, (ctx, { world_id, ...page }) => worldChat.history(ctx, { world_id }, page)),
        serve(chatRoomHistory, (ctx, { world_id, room_id, ...page }) =>
          roomChat.history(ctx, { world_id, room_id }, page),
        ),
      ],
      start: async () => retention.start(),
      stop: () => retention.stop(),
    };
  },
});
