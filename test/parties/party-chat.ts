import type { TokenResponse } from '../../protocol/auth.js';
import type { PartyMessage } from '../../protocol/parties.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import type { ReceivedFrame } from '../helpers/ws-client.js';
import { partyCalls } from './parties.js';

export const UNKNOWN_ID = '0190a000-0000-7000-8000-00000000dead';
export const messagesUrl = (partyId: string) => `/api/parties/${partyId}/messages`;

/** The frame of a party's chat.message with this body. */
export const partyMessage =
  (body: string) =>
  (frame: ReceivedFrame): boolean =>
    frame.t === 'chat.message' && (frame.d as PartyMessage).body === body;

/** The party chat tests' calls: the parties' own, sends, history and the rows the messages table holds. */
export function partyChatCalls(app: () => TestApp) {
  const parties = partyCalls(app);
  const send = (from: TokenResponse, partyId: string, body: unknown) =>
    parties.call('POST', messagesUrl(partyId), from, { body });
  /** A send that must succeed; answers the message. */
  const sent = async (from: TokenResponse, partyId: string, body: string): Promise<PartyMessage> =>
    (await parties.expectStatus(201, 'POST', messagesUrl(partyId), from, { body })).json();
  const history = (reader: TokenResponse, partyId: string, query = '') =>
    parties.call('GET', `${messagesUrl(partyId)}${query}`, reader);
  /** Every message row of the party, oldest first. */
  const rowsOf = (partyId: string) =>
    queryRows<{ sender_id: string | null; body: string; filtered: boolean }>(
      app().db,
      'select sender_id, body, filtered from messages where party_id = ? order by created_at, id',
      [partyId],
    );
  /** Every message row the user wrote, whatever its chat. */
  const writtenBy = (user: TokenResponse) =>
    queryRows(app().db, 'select body from messages where sender_id = ?', [user.user.id]);
  return { ...parties, send, sent, history, rowsOf, writtenBy };
}
