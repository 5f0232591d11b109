import type { EventAudience } from '../../platform/bus.js';
import type { Ctx } from '../../platform/context.js';
import { canonicalId } from '../../platform/ids.js';
import { type ChatChannel, type ChatChannelResolver, chatTopic } from '../chat/index.js';
import type { RoomRow, WorldRow } from './worlds.repository.js';

/**
 * The chat channels of a world (docs/chat.md): its own, and one per room. Who may write and read
 * them is who may read the world (`readable`: anyone signed in for a public or unlisted world,
 * its owner for a private one; 404 otherwise, for an unknown world or room too).
 */

type WorldTarget = { world_id: string; room_id: null };
type RoomTarget = { world_id: string; room_id: string };

interface ReadableWorlds {
  readable(ctx: Ctx, worldId: string): Promise<WorldRow>;
  readableRoom(ctx: Ctx, worldId: string, roomId: string): Promise<{ world: WorldRow; room: RoomRow }>;
}

/**
 * The filter of a joined socket: a message of a world made private after the join reaches its
 * owner only, on every node, without tracking the joins.
 */
const privateWorldFilter =
  (userId: string) =>
  (audience: EventAudience | undefined): boolean =>
    audience?.visibility !== 'nobody' || audience.subject === userId;

/** The channel of a world the caller may read: each message carries who may receive it now. */
function channelOf<Target extends WorldTarget | RoomTarget>(
  world: WorldRow,
  target: Target,
): ChatChannel<Target> {
  const audience: EventAudience | undefined =
    world.visibility === 'private' ? { subject: world.ownerId, visibility: 'nobody' } : undefined;
  const ids = target.room_id === null ? [target.world_id] : [target.world_id, target.room_id];
  return { target, topic: chatTopic(...ids), audience, deliveryFilter: privateWorldFilter };
}

/** The resolvers of a world's own chat and of its rooms' chats. */
export function worldChatChannels(worlds: ReadableWorlds): {
  world: ChatChannelResolver<{ world_id: string }, WorldTarget>;
  room: ChatChannelResolver<{ world_id: string; room_id: string }, RoomTarget>;
} {
  return {
    world: {
      kind: 'world',
      names: ['world_id'],
      // The world's messages carry no room: its history leaves out its rooms' messages.
      columns: { world_id: 'key', room_id: 'null' },
      async resolve(ctx, { world_id }) {
        const world = await worlds.readable(ctx, world_id);
        return channelOf(world, { world_id: world.id, room_id: null });
      },
      topicOf: ({ world_id }) => chatTopic(canonicalId(world_id)),
    },
    room: {
      kind: 'room',
      names: ['world_id', 'room_id'],
      // A room's messages carry their world too, so the world's deletion finds them.
      columns: { world_id: 'stored', room_id: 'key' },
      async resolve(ctx, { world_id, room_id }) {
        const { world, room } = await worlds.readableRoom(ctx, world_id, room_id);
        return channelOf(world, { world_id: world.id, room_id: room.id });
      },
      topicOf: ({ world_id, room_id }) => chatTopic(canonicalId(world_id), canonicalId(room_id)),
    },
  };
}
