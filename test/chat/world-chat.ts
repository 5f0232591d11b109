import type { TokenResponse } from '../../protocol/auth.js';
import type { WorldMessage } from '../../protocol/world-chat.js';
import { callsAs } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { readAllPages } from './pages.js';

/** Where a message goes: a world's own chat, or one of its rooms' with `roomId`. */
export interface Chat {
  worldId: string;
  roomId?: string;
}

export const messagesUrl = ({ worldId, roomId }: Chat) =>
  roomId ? `/api/worlds/${worldId}/rooms/${roomId}/messages` : `/api/worlds/${worldId}/messages`;

/** The world chat tests' REST calls and table reads, for the app of a test file. */
export function worldChatCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  const send = (from: TokenResponse, chat: Chat, body: string) =>
    call('POST', messagesUrl(chat), from, { body });

  /** A send that must succeed; answers the message. */
  const sent = async (from: TokenResponse, chat: Chat, body: string): Promise<WorldMessage> =>
    (await expectStatus(201, 'POST', messagesUrl(chat), from, { body })).json();

  /** Every message row of the world, its rooms' included, oldest first. */
  const rowsOf = (worldId: string) =>
    queryRows<{ room_id: string | null; sender_id: string | null; body: string; filtered: boolean }>(
      app().db,
      'select room_id, sender_id, body, filtered from messages where world_id = ? order by created_at, id',
      [worldId],
    );

  /** Every page of the chat's history (see readAllPages). */
  const allPages = (reader: TokenResponse, chat: Chat, limit: number, between?: () => void) =>
    readAllPages(expectStatus, reader, messagesUrl(chat), limit, between);

  return { call, expectStatus, send, sent, rowsOf, allPages };
}
