import type { TokenResponse } from '../../protocol/auth.js';
import { callsAs } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** The DM tests' REST calls and table reads, for the app of a test file. */
export function dmCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  const send = (from: TokenResponse, to: string, body: string) =>
    call('POST', `/api/chat/dm/${to}/messages`, from, { body });

  /** A send that must succeed; answers the message. */
  const sent = async (from: TokenResponse, to: TokenResponse, body: string) =>
    (await expectStatus(201, 'POST', `/api/chat/dm/${to.user.id}/messages`, from, { body })).json();

  /** Every message row sent by, and every conversation row of, the user. */
  const rowsOf = async (userId: string) => ({
    messages: await queryRows(
      app().db,
      'select body, filtered from messages where sender_id = ? order by created_at, id',
      [userId],
    ),
    conversations: await queryRows(
      app().db,
      'select id from conversations where user_a_id = ? or user_b_id = ? order by id',
      [userId, userId],
    ),
  });

  return { call, expectStatus, send, sent, rowsOf };
}
