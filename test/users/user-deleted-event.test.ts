import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { callsAs, PASSWORD, registerUser } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';

/**
 * `user.deleted`, recorded in the transaction that deletes the account (DELETE /api/users/me, the
 * only way an account is deleted). Read from the outbox's table
 * (test/helpers/domain-events.ts): a module consumes the type, and the app's outbox is stopped, so
 * what was recorded stays there.
 */

const USER_DELETED = 'user.deleted';

describe('user.deleted', () => {
  const app = useTestApp({}, { modules: [...testModules, consumerOf(USER_DELETED)] });
  const { call, expectStatus } = callsAs(app);
  const { recorded } = recordedEvents(app);

  beforeAll(async () => {
    await app().outbox.stop();
  });

  /** The events recorded for `user`'s account. */
  const recordedFor = async (user: TokenResponse) =>
    (await recorded(USER_DELETED)).filter((event) => event.user_id === user.user.id);
  const accountExists = async (user: TokenResponse) =>
    (await queryRows(app().db, 'select 1 from users where id = ?', [user.user.id])).length === 1;

  it('is recorded with the account’s deletion', async () => {
    const user = await registerUser(app());
    await expectStatus(204, 'DELETE', '/api/users/me', user, { password: PASSWORD });
    expect(await accountExists(user)).toBe(false);
    expect(await recordedFor(user)).toEqual([{ user_id: user.user.id }]);
  });

  it('is not recorded for a refused deletion', async () => {
    const user = await registerUser(app());
    const refused = await call('DELETE', '/api/users/me', user, { password: 'not the password' });
    expect(refused.json()).toMatchObject({ code: 'PASSWORD_INCORRECT' });
    expect(await accountExists(user)).toBe(true);
    expect(await recordedFor(user)).toEqual([]);
  });

  it('is recorded once when two deletions of one account race', async () => {
    const user = await registerUser(app());
    const answers = await Promise.all(
      [1, 2].map(() => call('DELETE', '/api/users/me', user, { password: PASSWORD })),
    );
    expect(answers.map((answer) => answer.statusCode)).toContain(204);
    expect(await accountExists(user)).toBe(false);
    expect(await recordedFor(user)).toEqual([{ user_id: user.user.id }]);
  });
});
