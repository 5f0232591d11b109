/**
 * The `stream` of a chat's event positions: its topic (`chat:<world_id>[:<room_id>]`, or
 * `group:<group_id>`), with the ids as the server spells them (lowercase).
 */
export function chatStream(chat: {
  world_id?: string;
  room_id?: string | null;
  group_id?: string;
}): string | undefined {
  if (typeof chat.group_id === 'string') return `group:${chat.group_id.toLowerCase()}`;
  const { world_id, room_id } = chat;
  if (typeof world_id !== 'string') return undefined;
  const world = world_id.toLowerCase();
  return room_id ? `chat:${world}:${room_id.toLowerCase()}` : `chat:${world}`;
}
