import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { MAIN_ROOM_NAME, type Room, type World, type WorldVisibility } from '../../../protocol/worlds.js';
import { type Ctx, callerOf, hasRole } from '../../platform/context.js';
import { cursorField, cursorKey, decodeCursor, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import { quotaExceeded } from '../../platform/quota.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { ChunkStreams } from './chunk-streams.js';
import { type ChunkHead, liveChunkHeads } from './chunks.repository.js';
import {
  countRooms,
  countWorldsOf,
  deleteRoom,
  deleteWorld,
  findRoom,
  findWorld,
  insertRoom,
  insertWorld,
  lockOwnerWorlds,
  lockWorld,
  type RoomRow,
  renameRoom,
  roomsOf,
  updateWorld,
  type WorldRow,
} from './worlds.repository.js';

const worldNotFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such world.');
const roomNotFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such room in this world.');
const roomNameTaken = () =>
  new AppError(ErrorCode.CONFLICT, 'This world already has a room of that name.', {
    errors: [{ path: 'name', message: 'is taken in this world' }],
  });

/** Public and unlisted worlds are readable by every signed-in user, private ones by their owner. */
export function canRead(world: Pick<WorldRow, 'ownerId' | 'visibility'>, userId: string): boolean {
  return world.visibility !== 'private' || world.ownerId === userId;
}

export function roomView(room: RoomRow): Room {
  return {
    id: room.id,
    world_id: room.worldId,
    name: room.name,
    created_at: room.createdAt.toISOString(),
    updated_at: room.updatedAt.toISOString(),
  };
}

const isChunkKey = cursorKey(cursorField.int32, cursorField.int32, cursorField.int32);
const isRoomKey = cursorKey(cursorField.id);

/** What one account may create (docs/limits.md). */
export interface WorldLimits {
  maxWorldsPerUser: number;
  maxRoomsPerWorld: number;
  /** World creations per user and window, shared by the nodes through Redis when there is one. */
  createLimiter: RateLimiterAbstract;
}

/** Runs in the transaction that created or updated the world, with the world as it now is. */
export type WorldSavedListener = (data: DataAccess, world: WorldRow) => Promise<void>;

/** Runs in the transaction that deletes the world, before the world's row is deleted. */
export type WorldDeletingListener = (data: DataAccess, worldId: string) => Promise<void>;

/**
 * Worlds and rooms: who may read and write them, and their lifecycle. Staff roles (docs/worlds.md,
 * "Administration"): moderators and admins review any world (the administration list, the revision
 * history of private worlds too); only admins change one that is not theirs (visibility, rollback),
 * and each such change is recorded in the audit log.
 */
export class WorldsService {
  constructor(
    private readonly streams: ChunkStreams,
    private readonly limits: WorldLimits,
  ) {}

  /**
   * The world if the caller may read it; 404 otherwise, so a private world's existence stays hidden.
   * A game server (the internal API: a service whose token is scoped to the world it was spawned
   * for) reads that one world, whatever its visibility, and gets 403 for any other.
   */
  async readable(ctx: Ctx, worldId: string, data: DataAccess = ctx.data): Promise<WorldRow> {
    if (ctx.service) {
      if (worldId !== ctx.service.scope)
        throw new AppError(ErrorCode.FORBIDDEN, 'This server token is for another world.');
      const world = await findWorld(data, worldId);
      if (!world) throw worldNotFound();
      return world;
    }
    const caller = callerOf(ctx);
    const world = isId(worldId) ? await findWorld(data, worldId) : undefined;
    if (!world || !canRead(world, caller.id)) throw worldNotFound();
    return world;
  }

  /** The world if the caller may read it, or whatever its visibility to moderators and admins. */
  async reviewable(ctx: Ctx, worldId: string, data: DataAccess = ctx.data): Promise<WorldRow> {
    if (ctx.service || !hasRole(callerOf(ctx), 'moderator')) return this.readable(ctx, worldId, data);
    const world = isId(worldId) ? await findWorld(data, worldId) : undefined;
    if (!world) throw worldNotFound();
    return world;
  }

  /**
   * The world if the caller owns it: 404 when they may not even read it, 403 when they only read it.
   * With `admins`, an admin acts on any world as its owner would (the caller then records it).
   */
  async owned(
    ctx: Ctx,
    worldId: string,
    data: DataAccess = ctx.data,
    lock = false,
    admins = false,
  ): Promise<WorldRow> {
    const caller = callerOf(ctx);
    const world = isId(worldId) ? await (lock ? lockWorld : findWorld)(data, worldId) : undefined;
    if (admins && hasRole(caller, 'admin')) {
      if (!world) throw worldNotFound();
      return world;
    }
    if (!world || !canRead(world, caller.id)) throw worldNotFound();
    if (world.ownerId !== caller.id)
      throw new AppError(ErrorCode.FORBIDDEN, 'Only the owner can change this world.');
    return world;
  }

  /** The room of a world the caller may read. */
  async readableRoom(ctx: Ctx, worldId: string, roomId: string): Promise<{ world: WorldRow; room: RoomRow }> {
    const world = await this.readable(ctx, worldId);
    return { world, room: await this.roomIn(ctx.data, world, roomId) };
  }

  /** The room of a world already checked for access; 404 when the id names no room of it. */
  async roomIn(data: DataAccess, world: WorldRow, roomId: string): Promise<RoomRow> {
    const room = isId(roomId) ? await findRoom(data, world.id, roomId) : undefined;
    if (!room) throw roomNotFound();
    return room;
  }

  async create(
    ctx: Ctx,
    input: { name: string; description?: string | undefined; visibility?: WorldVisibility | undefined },
  ): Promise<World> {
    const caller = callerOf(ctx);
    await consumeOrThrow(
      this.limits.createLimiter,
      caller.id,
      'Too many worlds created; wait before creating more.',
    );
    const now = ctx.now();
    const { maxWorldsPerUser } = this.limits;
    try {
      const [world, room] = await transaction(ctx.data, async (tx) => {
        await lockOwnerWorlds(tx, caller.id);
        if ((await countWorldsOf(tx, caller.id)) >= maxWorldsPerUser)
          throw quotaExceeded(`An account owns at most ${maxWorldsPerUser} worlds.`, maxWorldsPerUser);
        const created = await insertWorld(tx, {
          id: newId(),
          ownerId: caller.id,
          name: input.name,
          description: input.description ?? '',
          visibility: input.visibility ?? 'private',
          createdAt: now,
          updatedAt: now,
        });
        const main = await insertRoom(tx, {
          id: newId(),
          worldId: created.id,
          name: MAIN_ROOM_NAME,
          createdAt: now,
          updatedAt: now,
        });
        await this.saved(tx, created);
        return [created, main] as const;
      });
      return worldView(world, [room]);
    } catch (error) {
      // The token outlived its account by a moment: the world has no owner to reference.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION))
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      throw error;
    }
  }

  async get(ctx: Ctx, worldId: string): Promise<World> {
    const world = await this.readable(ctx, worldId);
    return worldView(world, await roomsOf(ctx.data, world.id, { limit: this.limits.maxRoomsPerWorld }));
  }

  async update(
    ctx: Ctx,
    worldId: string,
    patch: {
      name?: string | undefined;
      description?: string | undefined;
      visibility?: WorldVisibility | undefined;
    },
  ): Promise<World> {
    const world = await this.owned(ctx, worldId);
    const updated = await transaction(ctx.data, (tx) => this.change(tx, world.id, patch, ctx.now()));
    return this.changed(ctx, world, updated);
  }

  /** Writes a change of a world's settings and tells the listeners, in the caller's transaction. */
  async change(
    tx: DataAccess,
    worldId: string,
    patch: {
      name?: string | undefined;
      description?: string | undefined;
      visibility?: WorldVisibility | undefined;
    },
    now: Date,
  ): Promise<WorldRow> {
    const row = await updateWorld(
      tx,
      worldId,
      {
        name: patch.name ?? null,
        description: patch.description ?? null,
        visibility: patch.visibility ?? null,
      },
      now,
    );
    if (!row) throw worldNotFound();
    await this.saved(tx, row);
    return row;
  }

  /** After the commit of a change: a world made private ends the streams of those who no longer read it. */
  async changed(ctx: Ctx, before: WorldRow, updated: WorldRow): Promise<World> {
    if (before.visibility !== 'private' && updated.visibility === 'private')
      await this.streams.publishHidden(before.id);
    return worldView(updated, await roomsOf(ctx.data, before.id, { limit: this.limits.maxRoomsPerWorld }));
  }

  async delete(ctx: Ctx, worldId: string): Promise<void> {
    const world = await this.owned(ctx, worldId);
    await transaction(ctx.data, async (tx) => {
      for (const listener of this.deletingListeners) await listener(tx, world.id);
      await deleteWorld(tx, world.id);
    });
    await this.streams.publishWorldDeleted(world.id);
    for (const listener of this.deletionListeners) await listener(world.id);
  }

  /** Run in the transaction that deletes a world, before its row goes (WorldsApi.onDeleting). */
  onDeleting(listener: WorldDeletingListener): void {
    this.deletingListeners.push(listener);
  }

  private readonly deletingListeners: WorldDeletingListener[] = [];

  /** Told after a world was deleted (its rows, and the rows of other modules that cascade, are gone). */
  onDeleted(listener: (worldId: string) => Promise<void>): void {
    this.deletionListeners.push(listener);
  }

  private readonly deletionListeners: ((worldId: string) => Promise<void>)[] = [];

  /** Told in the transaction that created or updated a world. */
  onSaved(listener: WorldSavedListener): void {
    this.savedListeners.push(listener);
  }

  private readonly savedListeners: WorldSavedListener[] = [];

  private async saved(data: DataAccess, world: WorldRow): Promise<void> {
    for (const listener of this.savedListeners) await listener(data, world);
  }

  async listRooms(
    ctx: Ctx,
    worldId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ items: Room[]; next_cursor: string | null }> {
    const after = decodeCursor(page.cursor, isRoomKey);
    const world = await this.readable(ctx, worldId);
    const rows = await roomsOf(ctx.data, world.id, { afterId: after?.[0], limit: page.limit + 1 });
    return pageFrom(rows, page.limit, roomView, (room) => [room.id]);
  }

  async createRoom(ctx: Ctx, worldId: string, name: string): Promise<Room> {
    const now = ctx.now();
    try {
      return await transaction(ctx.data, async (tx) => {
        // The lock makes the count and the insert one step, so the cap holds under concurrency.
        const world = await this.owned(ctx, worldId, tx, true);
        const { maxRoomsPerWorld } = this.limits;
        if ((await countRooms(tx, world.id)) >= maxRoomsPerWorld)
          throw quotaExceeded(`A world has at most ${maxRoomsPerWorld} rooms.`, maxRoomsPerWorld);
        return roomView(
          await insertRoom(tx, { id: newId(), worldId: world.id, name, createdAt: now, updatedAt: now }),
        );
      });
    } catch (error) {
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw roomNameTaken();
      throw error;
    }
  }

  /** A room's live chunks with their revisions, in (x, y, z) order. */
  async listChunks(
    ctx: Ctx,
    worldId: string,
    roomId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ items: ChunkHead[]; next_cursor: string | null }> {
    const after = decodeCursor(page.cursor, isChunkKey);
    const { room } = await this.readableRoom(ctx, worldId, roomId);
    const rows = await liveChunkHeads(ctx.data, room.id, {
      ...(after ? { after: { x: after[0], y: after[1], z: after[2] } } : {}),
      limit: page.limit + 1,
    });
    return pageFrom(
      rows,
      page.limit,
      (head) => head,
      (head) => [head.x, head.y, head.z],
    );
  }

  async getRoom(ctx: Ctx, worldId: string, roomId: string): Promise<Room> {
    return roomView((await this.readableRoom(ctx, worldId, roomId)).room);
  }

  async renameRoom(ctx: Ctx, worldId: string, roomId: string, name: string): Promise<Room> {
    const room = await this.ownedRoom(ctx, worldId, roomId);
    if (room.name === MAIN_ROOM_NAME && name !== MAIN_ROOM_NAME) throw mainRoomStays();
    try {
      const renamed = await renameRoom(ctx.data, room.id, name, ctx.now());
      if (!renamed) throw roomNotFound();
      return roomView(renamed);
    } catch (error) {
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw roomNameTaken();
      throw error;
    }
  }

  async deleteRoom(ctx: Ctx, worldId: string, roomId: string): Promise<void> {
    const { world, room, commit } = await transaction(ctx.data, async (tx) => {
      const world = await this.owned(ctx, worldId, tx, true);
      const room = await this.roomIn(tx, world, roomId);
      if (room.name === MAIN_ROOM_NAME) throw mainRoomStays();
      return { world, room, commit: await deleteRoom(tx, world.id, room.id, ctx.now()) };
    });
    await this.streams.publishRoomDeleted(commit.seq, {
      world_id: world.id,
      room_id: room.id,
      content_revision: commit.contentRevision,
    });
  }

  private async ownedRoom(ctx: Ctx, worldId: string, roomId: string): Promise<RoomRow> {
    return this.roomIn(ctx.data, await this.owned(ctx, worldId), roomId);
  }
}

const mainRoomStays = () =>
  new AppError(ErrorCode.CONFLICT, `The room "${MAIN_ROOM_NAME}" can be neither renamed nor deleted.`);

export function worldView(world: WorldRow, rooms: readonly RoomRow[]): World {
  return {
    id: world.id,
    owner_id: world.ownerId,
    name: world.name,
    description: world.description,
    visibility: world.visibility,
    content_revision: world.contentRevision,
    created_at: world.createdAt.toISOString(),
    updated_at: world.updatedAt.toISOString(),
    rooms: rooms.map((room) => ({ id: room.id, name: room.name })),
  };
}
