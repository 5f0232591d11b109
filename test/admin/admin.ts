import type { TokenResponse } from '../../protocol/auth.js';
import { callsAs } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** The admin routes' calls and the rows they write, for the app of a test file. */
export function adminCalls(app: () => Pick<TestApp, 'http' | 'db'>) {
  const { call, expectStatus } = callsAs(app);
  const base = (userId: string) => `/api/admin/users/${userId}`;

  const suspend = (by: TokenResponse, userId: string, payload: object = { reason: 'spam' }) =>
    call('POST', `${base(userId)}/suspension`, by, payload);
  const unsuspend = (by: TokenResponse, userId: string) => call('DELETE', `${base(userId)}/suspension`, by);
  const grantRole = (by: TokenResponse, userId: string, role: string) =>
    call('PUT', `${base(userId)}/roles/${role}`, by);
  const revokeRole = (by: TokenResponse, userId: string, role: string) =>
    call('DELETE', `${base(userId)}/roles/${role}`, by);
  const revokeSessions = (by: TokenResponse, userId: string) =>
    call('DELETE', `${base(userId)}/sessions`, by);
  const account = (by: TokenResponse, userId: string) => call('GET', base(userId), by);
  const accounts = (by: TokenResponse, query = '') => call('GET', `/api/admin/users${query}`, by);

  const refresh = (user: TokenResponse) =>
    app().http.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refresh_token: user.refresh_token },
    });

  /** What a refusal must leave as it was: the account's suspension and roles, its sessions, its audit entries. */
  const stateOf = async (userId: string) => ({
    user: await queryRows(
      app().db,
      `select roles::text[] as roles, suspended_at, suspended_until, suspension_reason, suspended_by
       from users where id = ?`,
      [userId],
    ),
    sessions: await queryRows(app().db, 'select id, revoked_at from sessions where user_id = ? order by id', [
      userId,
    ]),
    audit: await queryRows(app().db, 'select id from audit_log where target_id = ?', [userId]),
  });

  return {
    call,
    expectStatus,
    suspend,
    unsuspend,
    grantRole,
    revokeRole,
    revokeSessions,
    account,
    accounts,
    refresh,
    stateOf,
  };
}
