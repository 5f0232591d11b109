import type { EntityManager } from '@mikro-orm/postgresql';
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

/**
 * Runs `work` in a transaction and keeps it open for 300 ms more, calling `during` meanwhile from
 * outside the transaction's async context. Called inside the callback, requests would inherit that
 * context, and MikroORM would run their statements in this very transaction.
 */
export async function whileTransactionOpen(
  app: () => TestApp,
  work: (em: EntityManager) => Promise<unknown>,
  during: () => void,
): Promise<void> {
  let opened: () => void = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const transaction = app()
    .db.orm.em.fork()
    .transactional(async (em) => {
      await work(em);
      opened();
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
  await Promise.race([open, transaction]);
  during();
  await transaction;
}
