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
import { WorldsService } from './worlds.service.js';

/** Worlds, their rooms and their chunk content (docs/worlds.md). */
export const worldsModule = defineModule({
  name: 'worlds',
  entities: [],
  needs: [],
  setup() {
    const worlds = new WorldsService();
    return {
      api: {},
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
