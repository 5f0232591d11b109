import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** The DM tests' REST calls and table reads, for the app of a test file. */
export function dmCalls(app: () => TestApp) {
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    user: TokenResponse,
    payload?: object,
  ): Promise<LightMyRequestResponse> =>
    app().http.inject({
      method,
      url,
      headers: bearer(user.access_token),
      ...(payload === undefined ? {} : { payload }),
    });

  /** A call that must answer `status`. */
  const expectStatus = async (status: number, ...args: Parameters<typeof call>) => {
    const response = await call(...args);
    expect(response.statusCode, `${args[0]} ${args[1]}: ${response.body}`).toBe(status);
    return response;
  };

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
