import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { DomainEventData } from '../../protocol/domain-events.js';
import { defineModule } from '../../src/platform/module.js';
import { callsAs, PASSWORD, registerUser } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/**
 * `user.deleted`, recorded in the transaction that deletes the account (DELETE /api/users/me, the
 * only way an account is deleted). Read from the outbox's table, as
 * test/platform/domain-events.test.ts reads events: a module consumes the type, and the app's
 * outbox is stopped, so what was recorded stays there.
 */

const USER_DELETED = 'user.deleted';

const deletionConsumer = defineModule({
  name: 'test-deletion-consumer',
  tables: [],
  needs: [],
  setup({ outbox }) {
    outbox.consume({
      name: `test:${USER_DELETED}`,
      type: USER_DELETED,
      retry: { leaseSeconds: 30, maxAttempts: 5 },
      handle: async () => {},
    });
    return { api: {} };
  },
});

describe('user.deleted', () => {
  const app = useTestApp({}, { modules: [...testModules, deletionConsumer] });
  const { call, expectStatus } = callsAs(app);

  beforeAll(async () => {
    await app().outbox.stop();
  });

  /** The events recorded for `user`'s account. */
  const recordedFor = async (user: TokenResponse): Promise<DomainEventData[typeof USER_DELETED][]> =>
    (
      await queryRows<{ data: DomainEventData[typeof USER_DELETED] }>(
        app().db,
        `select data from outbox_events where type = ? and data->>'user_id' = ?`,
        [USER_DELETED, user.user.id],
      )
    ).map((row) => row.data);
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
