import {
  chunksList,
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
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { registerChunkRoutes } from './chunks.routes.js';
import { ChunksService } from './chunks.service.js';
import { WorldsService } from './worlds.service.js';

/** Worlds, their rooms and their chunk content (docs/worlds.md). */
export const worldsModule = defineModule({
  name: 'worlds',
  entities: [],
  needs: [],
  setup(platform) {
    const worlds = new WorldsService();
    const chunks = new ChunksService(worlds);
    return {
      api: {},
      routes: (http) => registerChunkRoutes(http, chunks, (request) => platform.ctx(request)),
      operations: [
        serve(worldsCreate, (ctx, input) => worlds.create(ctx, input)),
        serve(worldsGet, (ctx, { world_id }) => worlds.get(ctx, world_id)),
        serve(worldsUpdate, (ctx, { world_id, ...patch }) => worlds.update(ctx, world_id, patch)),
        serve(worldsDelete, (ctx, { world_id }) => worlds.delete(ctx, world_id)),
        serve(roomsList, (ctx, { world_id, ...page }) => worlds.listRooms(ctx, world_id, page)),
        serve(roomsCreate, (ctx, { world_id, name }) => worlds.createRoom(ctx, world_id, name)),
        serve(roomsGet, (ctx, { world_id, room_id }) => worlds.getRoom(ctx, world_id, room_id)),
        serve(roomsUpdate, (ctx, { world_id, room_id, name }) =>
          worlds.renameRoom(ctx, world_id, room_id, name),
        ),
        serve(roomsDelete, (ctx, { world_id, room_id }) => worlds.deleteRoom(ctx, world_id, room_id)),
        serve(chunksList, (ctx, { world_id, room_id, ...page }) =>
          worlds.listChunks(ctx, world_id, room_id, page),
        ),
      ],
    };
  },
});
