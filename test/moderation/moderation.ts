import type { TokenResponse } from '../../protocol/auth.js';
import { newId } from '../../src/platform/ids.js';
import { callsAs } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** The moderation tests' REST calls, messages to report and table reads, for the app of a test file. */
export function moderationCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  const report = (user: TokenResponse, messageId: string, payload: object = { reason: 'spam' }) =>
    call('POST', `/api/chat/messages/${messageId}/reports`, user, payload);

  /** A report that must succeed; answers it. */
  const reported = async (user: TokenResponse, messageId: string, payload: object = { reason: 'spam' }) =>
    (await expectStatus(201, 'POST', `/api/chat/messages/${messageId}/reports`, user, payload)).json();

  const decide = (user: TokenResponse, reportId: string, payload: object) =>
    call('PATCH', `/api/moderation/reports/${reportId}`, user, payload);

  const queue = (user: TokenResponse, query = '') => call('GET', `/api/moderation/reports${query}`, user);

  /** A direct message from one user to another, sent through the DM route; answers its id. */
  const directMessage = async (from: TokenResponse, to: TokenResponse, body = 'hello'): Promise<string> =>
    (await expectStatus(201, 'POST', `/api/chat/dm/${to.user.id}/messages`, from, { body })).json().id;

  /**
   * A message of a world (or of one of its rooms) written as a row: world chat is another module's
   * job, and who may post there is none of moderation's business.
   */
  const worldMessage = async (
    from: TokenResponse,
    worldId: string,
    roomId: string | null = null,
    body = 'hello world',
  ): Promise<string> => {
    const id = newId();
    await queryRows(
      app().db,
      'insert into messages (id, world_id, room_id, sender_id, body) values (?, ?, ?, ?, ?)',
      [id, worldId, roomId, from.user.id, body],
    );
    return id;
  };

  /** Every report row the user filed, as stored. */
  const reportRowsBy = (user: TokenResponse) =>
    queryRows(
      app().db,
      `select message_id, state::text as state, reason, details
       from message_reports where reporter_id = ? order by created_at, id`,
      [user.user.id],
    );

  /** The stored row of one report, by id; undefined when there is none. */
  const reportRow = async (reportId: string) =>
    (
      await queryRows(
        app().db,
        `select message_id, reporter_id, moderator_id, state::text as state, note, resolved_at
         from message_reports where id = ?`,
        [reportId],
      )
    )[0];

  const messageCount = async (messageId: string) =>
    (
      await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from messages where id = ?', [
        messageId,
      ])
    )[0]?.n;

  return {
    call,
    expectStatus,
    report,
    reported,
    decide,
    queue,
    directMessage,
    worldMessage,
    reportRowsBy,
    reportRow,
    messageCount,
  };
}
